/*
 * Small helpers shared by every host-side file. include/ is the bottom
 * layer, with src/lib (log, proc, progress, the embedded blobs): what every
 * layer and the blobs share, calling nothing above it.
 */
#ifndef MEMDUMP_COMMON_H
#define MEMDUMP_COMMON_H

#include <stddef.h>
#include <stdint.h>

#define PAGE_SIZE	4096UL
#define PAGE_SHIFT	12
#define PAGE_MASK	(~(PAGE_SIZE - 1))

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define ALIGN_UP(x, a)	(((x) + (a) - 1) & ~((typeof(x))(a) - 1))
#define MIN(a, b)	((a) < (b) ? (a) : (b))
#define MAX(a, b)	((a) > (b) ? (a) : (b))

#define MEMDUMP_VERSION	"0.1"

/* Monotonic time in microseconds. */
uint64_t now_us(void);

#endif
