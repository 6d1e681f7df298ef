/*
 * The target's own UTS and IPC namespaces (ns.c): their host name, System V
 * objects with their content, and IPC sysctls, saved while the target is
 * frozen into CRIU's utsns-1.img and ipcns-{var,shm,sem,msg}-1.img.
 */
#ifndef MEMDUMP_DUMP_NS_H
#define MEMDUMP_DUMP_NS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "inventory.pb-c.h"
#include "ctx/restore_ctx.h"

struct dump_ctx;
struct refusals;

/* CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWNET: which of them pid has of its own. */
uint32_t ns_own_mask(pid_t pid);
/* The same, less CLONE_NEWNET when pid's network namespace has inode ext_net_ino (an
 * external one, --external net[INO]:KEY): the namespaces the dump saves. */
uint32_t ns_saved_mask(pid_t pid, uint64_t ext_net_ino);
/* What cannot be saved: a namespace shared with a process outside the dump,
 * System V objects memdump cannot recreate exactly, network devices. */
struct proc_tree;
/* tree: a tree dump's processes, which share pid's namespaces (or NULL) */
void ns_refuse(pid_t pid, const struct proc_tree *tree, int host_netns, uint64_t ext_net_ino,
	       struct refusals *r);
/* A process of tree other than its root: its mount namespace, when it is not
 * the root's (processes outside the dump in it, mntns_refuse_member). */
void ns_refuse_member(pid_t pid, const struct proc_tree *tree, struct refusals *r);
/* The dumping thread into pid's own network namespace for the whole dump
 * (*back: -1 when it has none), so that its sockets are found. */
int ns_enter_net(pid_t pid, int *back);
void ns_leave_net(int back);
/* The images, while frozen. */
int ns_dump(struct dump_ctx *d);
/* The namespace ids of the ids and inventory images: 1 for a saved one. */
void ns_fill_ids(uint32_t own, TaskKobjIdsEntry *ids);

/* Restore (its _restore.c files) */

/* ns.c: memdump's fd given for KEY by --inherit-fd fd[N]:KEY, or -1 */
int rst_inherit_fd(const struct restore_opts *o, const char *key);

/* ns.c: the UTS and IPC namespaces, new (from the images) or joined; this
 * thread is in them from enter to leave, the process is forked between. */
int ns_restore_enter(struct rst *r);
void ns_restore_leave(struct rst *r);
int ns_check_join(const struct restore_opts *o);

#endif
