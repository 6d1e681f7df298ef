/*
 * Entry of every blob, at offset 0. The caller sets %rdi to the blob's
 * argument area (and %rsi to the parasite's thread slot, or 0) and %rsp to a
 * stack inside memory it owns. blob_main() does
 * not return; if it did, trap so that the caller sees it.
 */
	.section .text.entry, "ax"
	.globl	_start
_start:
	andq	$-16, %rsp
	call	blob_main
1:	int3
	jmp	1b
	.section .note.GNU-stack, "", @progbits
