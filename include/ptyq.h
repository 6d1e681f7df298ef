/*
 * Pseudo-terminal pairs, shared by dump and restore (src/lib/ptyq.c): the
 * kernel's termios of a pty (TCGETS2, with the speeds; the locked one), and
 * putting queued bytes back into a pair exactly as they were: input (what
 * the slave's reader gets) injected with TIOCSTI, output (what the master's
 * reader gets) written to the slave, both with the slave's termios set so
 * that nothing is interpreted, echoed or converted, then set back.
 */
#ifndef MEMDUMP_PTYQ_H
#define MEMDUMP_PTYQ_H

#include <stddef.h>
#include <stdint.h>

#define PTY_NCC	19

/* The kernel's struct termios2; the locked termios is its first 36 bytes. */
struct kterm {
	uint32_t iflag, oflag, cflag, lflag;
	uint8_t line;
	uint8_t cc[PTY_NCC];
	uint32_t ispeed, ospeed;
};

int kterm_get(int fd, struct kterm *t);
int kterm_set(int fd, const struct kterm *t);
int kterm_get_locked(int fd, struct kterm *t);
int kterm_set_locked(int fd, const struct kterm *t);

/*
 * A new description of master's slave (TIOCGPTPEER; a locked pair is
 * unlocked for it and locked again). Returns the fd or -errno.
 */
int pty_open_peer(int master, int flags);

/*
 * The bytes queued in a pair. in: for the slave's reader; in canonical
 * mode its complete lines, each lines[i] = end << 1 | eof (end: the offset
 * after its last byte, its newline, EOL or EOL2 byte included; eof: ended
 * by an end-of-file, which no read returns), the bytes after the last one
 * the line being typed. out: for the master's reader.
 */
struct pty_queue {
	const uint8_t *in, *out;
	size_t in_len, out_len;
	const uint32_t *lines;
	size_t nr_lines;
};

/*
 * Put q back into the pair of master, whose slave has termios t: returns 0
 * or -errno with why. Packet mode is off meanwhile (no status byte is made
 * by the termios changes) and the locked termios cleared; both are as
 * before after. A quoted newline in a line goes back quoted (VLNEXT).
 */
int pty_put_back(int master, const struct kterm *t, const struct pty_queue *q, char *why,
		 size_t len);

#endif
