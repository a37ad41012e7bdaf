/* Finding the JavaVM of this process without being handed it.
 *
 * A library linked into an agent is loaded while HotSpot creates the VM
 * (-agentpath: JNI_CreateJavaVM -> create_vm_init_agents), and its user may
 * never pass it the JavaVM. JNI_GetCreatedJavaVMs answers only once creation
 * has completed (JDK 17.0.15 and 25 both return no VM until then, after
 * JDK-8308341), which is after VMInit, too late to watch for VMInit. */
#ifndef P2_VM_LOCATE_H
#define P2_VM_LOCATE_H

#include <jni.h>

/* The JavaVM of this process: JNI_GetCreatedJavaVMs' answer once the VM is
 * created, else the VM under creation found by p2_vm_locate_creating().
 * NULL when no libjvm is loaded or neither way finds it.
 * Context: Anywhere (not in a signal handler). */
JavaVM *p2_vm_locate(void);

/* The JavaVM HotSpot is creating: the address JNI_GetCreatedJavaVMs would
 * return (HotSpot has one, main_vm in prims/jni.cpp), read from that
 * function's code and accepted only if it holds a JNI invoke interface whose
 * entry points are libjvm's. NULL otherwise. Architecture-specific.
 * Context: Anywhere (not in a signal handler). */
JavaVM *p2_vm_locate_creating(void);

#endif
