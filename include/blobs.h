/* The embedded blobs: flat images whose entry point is their first byte. */
#ifndef MEMDUMP_BLOBS_H
#define MEMDUMP_BLOBS_H

extern const char parasite_blob[], parasite_blob_end[];
extern const char restorer_blob[], restorer_blob_end[];

#endif
