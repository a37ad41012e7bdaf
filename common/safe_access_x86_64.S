/* Fault-tolerant copy for x86-64 (System V ABI); the single loads are
 * inlined where they are used (safe_access.h).
 *
 * Every instruction that may touch a bad address lies between
 * p2_safe_fault_begin and p2_safe_fault_end. The SIGSEGV/SIGBUS handler in
 * safe_access_linux.c moves a faulting pc in that range to
 * p2_safe_fault_return, which returns PROFILE2_UNREADABLE_MEMORY (-18). The
 * function is a leaf that never touches the stack, so `ret` at the resume
 * point returns to the caller with a consistent stack. */

	.text
	.globl	p2_safe_fault_begin
	.hidden	p2_safe_fault_begin
	.globl	p2_safe_fault_end
	.hidden	p2_safe_fault_end
	.globl	p2_safe_fault_return
	.hidden	p2_safe_fault_return

	.p2align 4
p2_safe_fault_begin:

/* int p2_safe_copy(void *dst, const void *src, size_t n)
 * Byte copy; a fault part-way leaves dst partly written. */
	.globl	p2_safe_copy
	.hidden	p2_safe_copy
	.type	p2_safe_copy, @function
p2_safe_copy:
	.cfi_startproc
	testq	%rdx, %rdx
	je	2f
1:	movzbl	(%rsi), %eax
	movb	%al, (%rdi)
	incq	%rsi
	incq	%rdi
	decq	%rdx
	jne	1b
2:	xorl	%eax, %eax
	ret
	.cfi_endproc
	.size	p2_safe_copy, . - p2_safe_copy

p2_safe_fault_end:

	.type	p2_safe_fault_return, @function
p2_safe_fault_return:
	.cfi_startproc
	movl	$-18, %eax
	ret
	.cfi_endproc
	.size	p2_safe_fault_return, . - p2_safe_fault_return

	.section .note.GNU-stack,"",@progbits
