/* The freestanding blobs, embedded in the memdump binary (see blobs.h). */
	.section .rodata
	.balign	4096
	.globl	parasite_blob, parasite_blob_end
parasite_blob:
	.incbin	PARASITE_BIN
parasite_blob_end:

	.balign	4096
	.globl	restorer_blob, restorer_blob_end
restorer_blob:
	.incbin	RESTORER_BIN
restorer_blob_end:
	.section .note.GNU-stack, "", @progbits
