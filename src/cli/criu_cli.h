/* CRIU's command line, when memdump runs under the name `criu` (criu_cli.c). */
#ifndef MEMDUMP_CRIU_CLI_H
#define MEMDUMP_CRIU_CLI_H

/*
 * Not run as criu: -1, argv untouched. Run as criu: -1 with *argc, *argv
 * rewritten into memdump's command line, or the exit status (0 or 1) of a
 * call answered here (check --feature) or refused, said on stderr in one line.
 */
int criu_cli(int *argc, char ***argv);

#endif
