/*
 * Sessions and process groups of a dumped tree: the plan a restore follows to
 * give every process its session and group, each process forking its
 * children one subtree after the other (restore/tree.c).
 *
 * A process inherits its session from the process that forks it, or leads
 * one (setsid). So:
 *  - a process in a session neither it nor its parent leads or is in was
 *    forked before its parent (and the parent's parents up to one in that
 *    session) called setsid: each of those forks its children born in the
 *    old session first, then calls setsid, then forks the others;
 *  - a child of a PID namespace's init in another session was reparented to
 *    it: a helper forks it in that session and exits (the child goes to the
 *    init again). The helper is the dead session leader itself (its PID,
 *    setsid), or is forked by the live leader;
 *  - a process joins its group once forked; a group whose leader is dead is
 *    made by a helper with the leader's PID, forked by its first member,
 *    which exits once the member is in it.
 * The order is then played through, group by group: what the plan cannot
 * give a process (a group whose leader comes later, a session no helper can
 * carry) is refused by name, at the dump's dry run and again at restore.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "task/sessions.h"

struct planner {
	const struct sess_proc *p;
	int np;
	const struct sess_proc *z;	/* zombies leading their own sessions */
	int nz;
	bool ns_init;
	struct sess_plan *plan;
	int cap;
	pid_t *born;		/* per process: the session it is born in, setsid later; -1: none */
	pid_t *sid, *pgid;	/* per node, while played */
	bool *alive;
	pid_t next_free;	/* a carrier's PID */
};

static int node_add(struct planner *pl, enum sess_kind kind, pid_t pid, int forker)
{
	struct sess_plan *s = pl->plan;

	if (s->nr == pl->cap) {
		int cap = pl->cap * 2;
		struct sess_node *n = realloc(s->n, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		s->n = n;
		pl->cap = cap;
	}
	s->n[s->nr] = (struct sess_node){ .kind = kind, .pid = pid, .forker = forker,
					   .group_helper = -1 };
	return s->nr++;
}

static int kid_add(struct sess_node *f, int k)
{
	int *n = realloc(f->kids, (f->nr_kids + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	f->kids = n;
	f->kids[f->nr_kids++] = k;
	return 0;
}

static int proc_of(const struct planner *pl, pid_t pid)
{
	for (int i = 0; i < pl->np; i++)
		if (pl->p[i].pid == pid)
			return i;
	return -1;
}

static int refuse_sid(const struct planner *pl, int i, const char *why)
{
	return fail(-EOPNOTSUPP, "process %d is in session %d%s, which restore cannot give it: "
		    "%s", pl->p[i].host, pl->p[i].sid, pl->ns_init ? " (of its PID namespace)" : "",
		    why);
}

/*
 * Process i's session is neither its own nor its parent's: the ancestors
 * that left it by setsid after forking are born in it. 1: reparented to
 * the root instead.
 */
static int mark_born(struct planner *pl, int i)
{
	const struct sess_proc *p = pl->p;
	pid_t s = p[i].sid;
	int x = p[i].parent;

	if (s == p[i].pid || s == p[x].sid)
		return 0;
	if (x == 0)
		return 1;
	for (; x != 0 && p[x].pid != s && p[x].sid != s; x = p[x].parent) {
		if (p[x].sid != p[x].pid)
			return refuse_sid(pl, i, "an ancestor between it and its session is in "
					  "a third session it does not lead");
		if (pl->born[x] >= 0 && pl->born[x] != s)
			return refuse_sid(pl, i, "an ancestor forked children of two sessions "
					  "before its setsid");
		pl->born[x] = s;
	}
	if (x == 0 && p[0].pid != s && p[0].sid != s)
		return refuse_sid(pl, i, "no ancestor is in it (reparented)");
	return 0;
}

static int zombie_of(const struct planner *pl, pid_t pid)
{
	for (int i = 0; i < pl->nz; i++)
		if (pl->z[i].pid == pid)
			return i;
	return -1;
}

/* The dead leader's node: a helper with its PID, or the zombie it is, forked by its parent. */
static int dead_leader(struct planner *pl, int i, pid_t s)
{
	int z = zombie_of(pl, s), k;

	k = z < 0 ? node_add(pl, SK_SESSION, s, 0) : node_add(pl, SK_ZOMBIE, s, pl->z[z].parent);
	if (k >= 0)
		pl->plan->n[k].host = z < 0 ? pl->p[i].host_sid : pl->z[z].host;
	return k;
}

/* The helper forking root's child i in its session (made once per session). */
static int session_helper(struct planner *pl, int i)
{
	pid_t s = pl->p[i].sid;
	int leader = proc_of(pl, s), k;

	if (!pl->ns_init)
		return refuse_sid(pl, i, "it was reparented to the root of the dump, which is "
				  "not the init of a PID namespace");
	if (!s)
		return refuse_sid(pl, i, "a session outside its PID namespace");
	for (k = pl->np; k < pl->plan->nr; k++)
		if (pl->plan->n[k].kind != SK_GROUP && pl->plan->n[k].kind != SK_PROC &&
		    pl->sid[k] == s)
			return k;
	if (leader > 0 && pl->p[leader].sid != s)
		return refuse_sid(pl, i, "its leader is in another session");
	k = leader > 0 ? node_add(pl, SK_CARRIER, pl->next_free++, leader) : dead_leader(pl, i, s);
	if (k >= 0)
		pl->sid[k] = s;	/* which session it carries, until played */
	return k;
}

/* Who forks each process, in which order (born in the old session first). */
static int assign_forkers(struct planner *pl)
{
	struct sess_node *n;
	int ret = 0;

	for (int i = 1; i < pl->np && ret >= 0; i++) {
		ret = mark_born(pl, i);
		if (ret == 1)
			ret = session_helper(pl, i);
		else if (!ret)
			ret = pl->p[i].parent;
		if (ret >= 0)
			pl->plan->n[i].forker = ret;
	}
	if (ret < 0)
		return ret;
	ret = 0;
	n = pl->plan->n;
	for (int pass = 0; pass < 2; pass++)	/* the early kids, then the others */
		for (int k = 1; k < pl->plan->nr && !ret; k++) {
			int f = n[k].forker;
			pid_t need = k < pl->np ? (pl->born[k] >= 0 ? pl->born[k] :
						  pl->p[k].sid) : -2;
			bool early = f < pl->np && pl->born[f] >= 0 && need == pl->born[f] &&
				     (k >= pl->np || pl->born[k] >= 0 || pl->p[k].sid != pl->p[k].pid);

			if (early == !pass) {
				ret = kid_add(&n[f], k);
				n[f].nr_early += early;
			}
		}
	return ret;
}

static bool group_in(const struct planner *pl, pid_t g, pid_t s, bool *elsewhere)
{
	for (int k = 0; k < pl->plan->nr; k++)
		if (pl->alive[k] && pl->pgid[k] == g) {
			if (pl->sid[k] == s)
				return true;
			*elsewhere = true;
		}
	return false;
}

static int refuse_pgid(const struct planner *pl, int i, const char *why)
{
	return fail(-EOPNOTSUPP, "process %d is in process group %d%s, which restore cannot "
		    "give it: %s", pl->p[i].host, pl->p[i].pgid,
		    pl->ns_init ? " (of its PID namespace)" : "", why);
}

/* Process k, forked, in its group: by itself, a group there already, or a helper's. */
static int play_group(struct planner *pl, int k)
{
	struct sess_node *n = &pl->plan->n[k];
	pid_t g = pl->p[k].pgid;
	bool elsewhere = false;
	int h;

	if (g == pl->pgid[k])
		return 0;
	if (g == pl->p[k].pid || group_in(pl, g, pl->sid[k], &elsewhere)) {
		n->join = g;
		pl->pgid[k] = g;
		return 0;
	}
	if (elsewhere)
		return refuse_pgid(pl, k, "a group of that number is in another session then");
	if (!g || proc_of(pl, g) >= 0)
		return refuse_pgid(pl, k, g ? "its leader is restored after it" :
				   "a group outside its PID namespace");
	h = node_add(pl, SK_GROUP, g, k);
	if (h < 0)
		return h;
	pl->plan->n[h].host = pl->p[k].host_pgid;
	n = &pl->plan->n[k];
	n->group_helper = h;
	n->join = g;
	pl->pgid[k] = g;
	return 0;
}

/* Process k forked in session sid[k], group pgid[k]: as it is to be, or refused. */
static int play_proc(struct planner *pl, int k)
{
	const struct sess_proc *p = &pl->p[k];
	struct sess_node *n = &pl->plan->n[k];

	if (pl->born[k] >= 0) {
		if (pl->sid[k] != pl->born[k] || p->sid != p->pid || p->pgid != p->pid)
			return refuse_sid(pl, k, "it would not be born in the session its "
					  "children are in");
		n->setsid_late = true;
		return 0;
	}
	if (p->sid == p->pid) {
		n->do_setsid = true;
		pl->sid[k] = pl->pgid[k] = p->pid;
	}
	if (pl->sid[k] != p->sid)
		return refuse_sid(pl, k, "the process forking it is not in it");
	return play_group(pl, k);
}

/* Node k and what it forks, in the order the restore does (k forked in psid, ppgid). */
static int play(struct planner *pl, int k, pid_t psid, pid_t ppgid)
{
	struct sess_node *n = &pl->plan->n[k];
	int ret = 0;

	pl->sid[k] = psid;
	pl->pgid[k] = ppgid;
	pl->alive[k] = true;
	if (n->kind == SK_SESSION || n->kind == SK_ZOMBIE)
		pl->sid[k] = pl->pgid[k] = n->pid;
	else if (n->kind == SK_PROC)
		ret = play_proc(pl, k);
	if (!ret && n->kind == SK_PROC && n->group_helper >= 0)
		pl->alive[n->group_helper] = false;	/* its member is in: it goes */
	for (int i = 0; i < n->nr_kids && !ret; i++) {
		n = &pl->plan->n[k];
		if (i == n->nr_early && n->setsid_late)
			pl->sid[k] = pl->pgid[k] = n->pid;
		ret = play(pl, n->kids[i], pl->sid[k], pl->pgid[k]);
	}
	n = &pl->plan->n[k];
	if (!ret && n->setsid_late && n->nr_early == n->nr_kids)
		pl->sid[k] = pl->pgid[k] = n->pid;
	if (n->kind != SK_PROC)
		pl->alive[k] = false;	/* a helper exits once its children are forked */
	return ret;
}

static int planner_init(struct planner *pl, const struct sess_proc *p, int np, bool ns_init,
			struct sess_plan *plan)
{
	pid_t max = 0;

	*pl = (struct planner){ .p = p, .np = np, .ns_init = ns_init, .plan = plan,
				.cap = 2 * np + 8 };
	*plan = (struct sess_plan){ .nr_procs = np,
				    .outer_pgid = p[0].pgid != p[0].pid ? p[0].pgid : 0 };
	plan->n = calloc(pl->cap, sizeof(*plan->n));
	pl->born = calloc(np, sizeof(*pl->born));
	pl->sid = calloc(2 * (size_t)np + 8, sizeof(*pl->sid));	/* a helper per process at most */
	pl->pgid = calloc(2 * (size_t)np + 8, sizeof(*pl->pgid));
	pl->alive = calloc(2 * (size_t)np + 8, sizeof(*pl->alive));
	if (!plan->n || !pl->born || !pl->sid || !pl->pgid || !pl->alive)
		return -ENOMEM;
	for (int i = 0; i < np; i++) {
		pl->born[i] = -1;
		plan->n[i] = (struct sess_node){ .kind = SK_PROC, .pid = p[i].pid, .forker = -1,
						 .group_helper = -1 };
		max = p[i].pid > max ? p[i].pid : max;
		max = p[i].pgid > max ? p[i].pgid : max;
		max = p[i].sid > max ? p[i].sid : max;
	}
	plan->nr = np;
	pl->next_free = max + 1;
	return 0;
}

int sess_plan_make(const struct sess_proc *p, int np, const struct sess_proc *z, int nz,
		   bool ns_init, struct sess_plan *plan)
{
	struct planner pl;
	int ret = planner_init(&pl, p, np, ns_init, plan);

	pl.z = z;
	pl.nz = nz;
	if (!ret)
		ret = assign_forkers(&pl);
	if (!ret) {
		memset(pl.sid, 0, (2 * (size_t)np + 8) * sizeof(*pl.sid));
		ret = play(&pl, 0, p[0].sid, p[0].pgid);
	}
	if (!ret && plan->nr > 2 * np + 8)
		ret = fail(-E2BIG, "too many helpers to rebuild the tree's sessions");
	free(pl.born);
	free(pl.sid);
	free(pl.pgid);
	free(pl.alive);
	if (ret < 0)
		sess_plan_free(plan);
	return ret < 0 ? ret : 0;
}

void sess_plan_free(struct sess_plan *plan)
{
	for (int i = 0; plan->n && i < plan->nr; i++)
		free(plan->n[i].kids);
	free(plan->n);
	*plan = (struct sess_plan){ 0 };
}

/* Its parent's index among out[0..i), -1: not there. */
static int parent_index(PstreeEntry *const *pe, int i)
{
	for (int k = 0; k < i; k++)
		if (pe[k]->pid == pe[i]->ppid)
			return k;
	return -1;
}

int sess_procs_of(PstreeEntry *const *pe, int n, struct sess_proc *out)
{
	bool ns = pe[0]->has_ns_sid;

	for (int i = 0; i < n; i++) {
		out[i] = (struct sess_proc){
			.pid = ns && pe[i]->n_ns_threads ? (pid_t)pe[i]->ns_threads[0] :
							   (pid_t)pe[i]->pid,
			.pgid = ns ? (pid_t)pe[i]->ns_pgid : (pid_t)pe[i]->pgid,
			.sid = ns ? (pid_t)pe[i]->ns_sid : (pid_t)pe[i]->sid,
			.host = (pid_t)pe[i]->pid,
			.host_pgid = (pid_t)pe[i]->pgid,
			.host_sid = (pid_t)pe[i]->sid,
			.parent = i ? parent_index(pe, i) : -1,
		};
		if (i && out[i].parent < 0)
			return fail(-EIO, "pstree.img is corrupt: the parent %u of process %u is "
				    "not listed before it", pe[i]->ppid, pe[i]->pid);
		if (ns && (!pe[i]->has_ns_sid || !pe[i]->n_ns_threads))
			return fail(-EIO, "pstree.img is corrupt: process %u has no IDs in its "
				    "PID namespace", pe[i]->pid);
	}
	return 0;
}

int sess_zombie_of(PstreeEntry *const *pe, int n, const PstreeEntry *z, struct sess_proc *out)
{
	bool ns = pe[0]->has_ns_sid;
	pid_t pid = ns && z->n_ns_threads ? (pid_t)z->ns_threads[0] : (pid_t)z->pid;
	pid_t sid = ns ? (pid_t)z->ns_sid : (pid_t)z->sid;

	if (!pid || sid != pid)
		return 0;
	for (int k = 0; k < n; k++)
		if (pe[k]->pid == z->ppid) {
			*out = (struct sess_proc){ .pid = pid, .pgid = pid, .sid = pid,
						   .host = (pid_t)z->pid, .host_pgid = (pid_t)z->pid,
						   .host_sid = (pid_t)z->pid, .parent = k };
			return 1;
		}
	return 0;
}
