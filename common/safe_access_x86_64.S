/* Fault-tolerant loads for x86-64 (System V ABI).
 *
 * Every instruction that may touch a bad address lies between
 * p2_safe_fault_begin and p2_safe_fault_end. The SIGSEGV/SIGBUS handler in
 * safe_access_linux.c moves a faulting pc in that range to
 * p2_safe_fault_return, which returns PROFILE2_UNREADABLE_MEMORY (-18). The
 * functions are leaves that never touch the stack, so `ret` at the resume
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

/* int p2_safe_load_u64(const void *addr, uint64_t *out) */
	.globl	p2_safe_load_u64
	.hidden	p2_safe_load_u64
	.type	p2_safe_load_u64, @function
p2_safe_load_u64:
	.cfi_startproc
	movq	(%rdi), %rax
	movq	%rax, (%rsi)
	xorl	%eax, %eax
	ret
	.cfi_endproc
	.size	p2_safe_load_u64, . - p2_safe_load_u64

/* int p2_safe_load_u32(const void *addr, uint32_t *out) */
	.globl	p2_safe_load_u32
	.hidden	p2_safe_load_u32
	.type	p2_safe_load_u32, @function
p2_safe_load_u32:
	.cfi_startproc
	movl	(%rdi), %eax
	movl	%eax, (%rsi)
	xorl	%eax, %eax
	ret
	.cfi_endproc
	.size	p2_safe_load_u32, . - p2_safe_load_u32

/* int p2_safe_load_u16(const void *addr, uint16_t *out) */
	.globl	p2_safe_load_u16
	.hidden	p2_safe_load_u16
	.type	p2_safe_load_u16, @function
p2_safe_load_u16:
	.cfi_startproc
	movzwl	(%rdi), %eax
	movw	%ax, (%rsi)
	xorl	%eax, %eax
	ret
	.cfi_endproc
	.size	p2_safe_load_u16, . - p2_safe_load_u16

/* int p2_safe_load_u8(const void *addr, uint8_t *out) */
	.globl	p2_safe_load_u8
	.hidden	p2_safe_load_u8
	.type	p2_safe_load_u8, @function
p2_safe_load_u8:
	.cfi_startproc
	movzbl	(%rdi), %eax
	movb	%al, (%rsi)
	xorl	%eax, %eax
	ret
	.cfi_endproc
	.size	p2_safe_load_u8, . - p2_safe_load_u8

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
