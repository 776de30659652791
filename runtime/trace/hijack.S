/*
 * hijack.S - the trace runtime's entries that are not C functions (x86-64):
 *
 *   mcount, _mcount   called by -pg code after its prologue: rbp is the
 *                     function's frame, its return address at 8(%rbp)
 *   __fentry__        called by -pg -mfentry code before its prologue: the
 *                     function's return address just above ours
 *   sonde_rt_plt      where every patched PLT slot leads (stub: push the
 *                     slot's index, jump here): records the call, jumps on
 *   sonde_rt_return   where a call whose return address was taken over
 *                     returns (trace.c, "return addresses")
 *   _Unwind_*         the unwinder's entries: every return address taken
 *                     over is put back first, then the real one runs
 *
 * The C side keeps every argument register unless saved here: the argument
 * registers (and rax, the vector count of a variadic call; r10, a static chain)
 * and xmm0-7 around a call's entry; rax, rdx, xmm0 and xmm1 (a call's result)
 * around its return. x87 registers are left alone: the C side uses none.
 */
#if defined(__x86_64__)

	.text

/* Save the argument registers in an aligned area below rbp (after push rbp; mov rsp, rbp). */
.macro SAVE_ARGS
	sub	$192, %rsp
	and	$-16, %rsp
	mov	%rdi, 0(%rsp)
	mov	%rsi, 8(%rsp)
	mov	%rdx, 16(%rsp)
	mov	%rcx, 24(%rsp)
	mov	%r8, 32(%rsp)
	mov	%r9, 40(%rsp)
	mov	%rax, 48(%rsp)
	mov	%r10, 56(%rsp)
	movdqu	%xmm0, 64(%rsp)
	movdqu	%xmm1, 80(%rsp)
	movdqu	%xmm2, 96(%rsp)
	movdqu	%xmm3, 112(%rsp)
	movdqu	%xmm4, 128(%rsp)
	movdqu	%xmm5, 144(%rsp)
	movdqu	%xmm6, 160(%rsp)
	movdqu	%xmm7, 176(%rsp)
.endm

.macro RESTORE_ARGS
	mov	0(%rsp), %rdi
	mov	8(%rsp), %rsi
	mov	16(%rsp), %rdx
	mov	24(%rsp), %rcx
	mov	32(%rsp), %r8
	mov	40(%rsp), %r9
	mov	48(%rsp), %rax
	mov	56(%rsp), %r10
	movdqu	64(%rsp), %xmm0
	movdqu	80(%rsp), %xmm1
	movdqu	96(%rsp), %xmm2
	movdqu	112(%rsp), %xmm3
	movdqu	128(%rsp), %xmm4
	movdqu	144(%rsp), %xmm5
	movdqu	160(%rsp), %xmm6
	movdqu	176(%rsp), %xmm7
.endm

	.globl	mcount
	.type	mcount, @function
	.globl	_mcount
	.type	_mcount, @function
mcount:
_mcount:
	.cfi_startproc
	push	%rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	mov	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	SAVE_ARGS
	mov	8(%rbp), %rdi		/* the call site in the function */
	mov	0(%rbp), %rsi		/* the function's frame ... */
	add	$8, %rsi		/* ... and its return address there */
	call	sonde_rt_mcount
	RESTORE_ARGS
	mov	%rbp, %rsp
	pop	%rbp
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
	.size	mcount, .-mcount
	.size	_mcount, .-_mcount

	.globl	__fentry__
	.type	__fentry__, @function
__fentry__:
	.cfi_startproc
	push	%rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	mov	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	SAVE_ARGS
	mov	8(%rbp), %rdi		/* the call site: the function's first instruction after */
	lea	16(%rbp), %rsi		/* the function's return address, above ours */
	call	sonde_rt_mcount
	RESTORE_ARGS
	mov	%rbp, %rsp
	pop	%rbp
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
	.size	__fentry__, .-__fentry__

/* [rsp]: the PLT slot's index; 8(%rsp): the return address of the call into the PLT. */
	.globl	sonde_rt_plt
	.hidden	sonde_rt_plt
	.type	sonde_rt_plt, @function
sonde_rt_plt:
	.cfi_startproc
	.cfi_def_cfa_offset 16
	push	%rbp
	.cfi_def_cfa_offset 24
	.cfi_offset %rbp, -24
	mov	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	SAVE_ARGS
	mov	8(%rbp), %rdi		/* the index */
	lea	16(%rbp), %rsi		/* where the return address is */
	call	sonde_rt_plt_enter	/* the function to go on to */
	mov	%rax, %r11
	RESTORE_ARGS
	mov	%rbp, %rsp
	pop	%rbp
	.cfi_def_cfa %rsp, 16
	add	$8, %rsp		/* the index */
	.cfi_def_cfa_offset 8
	jmp	*%r11
	.cfi_endproc
	.size	sonde_rt_plt, .-sonde_rt_plt

/* A call whose return address was taken over returned here: rsp is its CFA. */
	.globl	sonde_rt_return
	.hidden	sonde_rt_return
	.type	sonde_rt_return, @function
sonde_rt_return:
	pushq	$0			/* becomes the real return address */
	push	%rbp
	mov	%rsp, %rbp
	push	%rax
	push	%rdx
	sub	$48, %rsp
	and	$-16, %rsp
	movdqu	%xmm0, 0(%rsp)
	movdqu	%xmm1, 16(%rsp)
	lea	16(%rbp), %rdi		/* the call's CFA */
	call	sonde_rt_hj_return
	mov	%rax, 8(%rbp)
	movdqu	0(%rsp), %xmm0
	movdqu	16(%rsp), %xmm1
	mov	-8(%rbp), %rax
	mov	-16(%rbp), %rdx
	mov	%rbp, %rsp
	pop	%rbp
	ret
	.size	sonde_rt_return, .-sonde_rt_return

/* The unwinder's entries: put the return addresses back, then the real one (rax). */
.macro UNWIND_ENTRY name, id
	.globl	\name
	.type	\name, @function
\name:
	push	%rdi
	push	%rsi
	push	%rdx
	mov	$\id, %edi
	call	sonde_rt_unwind_prep
	pop	%rdx
	pop	%rsi
	pop	%rdi
	jmp	*%rax
	.size	\name, .-\name
.endm

	UNWIND_ENTRY _Unwind_RaiseException, 0
	UNWIND_ENTRY _Unwind_Resume, 1
	UNWIND_ENTRY _Unwind_ForcedUnwind, 2
	UNWIND_ENTRY _Unwind_Resume_or_Rethrow, 3
	UNWIND_ENTRY _Unwind_Backtrace, 4

#endif
	.section .note.GNU-stack,"",@progbits
