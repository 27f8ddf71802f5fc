/*
 * What the broker's JSON-lines sockets (cni.sock, ctl.sock) do with a
 * connection's bytes before an op sees a request, mirrored for the
 * request parsers' fuzz targets (fuzz_lines.c).  broker/server.c cuts the
 * bytes into lines at '\n' (a line over the socket's limit closes the
 * connection), tokenises each where it lies in the input buffer,
 * unterminated, with a fresh strict json_tokener (json-c's default depth;
 * the whole line must be one value), refuses what is not an object with a
 * string "op" naming one of the socket's ops, and calls the op.  A change
 * to client_line() or client_take_lines() must be made here too.  A final
 * line without its newline is taken as if the newline followed; a bad
 * request closes the connection, so it ends the input.
 */
#ifndef ENID_FUZZ_LINES_H
#define ENID_FUZZ_LINES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#define CHECK(x)	do { if (!(x)) __builtin_trap(); } while (0)

/* A line's value and its length: 0 if served, -1 if the connection would
 * be closed (bad-request). */
typedef int (*fuzz_line_fn)(struct json_object *o, size_t len);

/* Feed data to one, line by line, as the server would; lines over
 * maxline end it. */
void	fuzz_lines(const uint8_t *data, size_t size, size_t maxline,
	    fuzz_line_fn one);

/* What client_line() refuses before an op is called; ops: NULL-ended. */
bool	fuzz_server_refuses(struct json_object *o, const char *const *ops);

bool	fuzz_terminated(const char *s, size_t size);

#endif /* ENID_FUZZ_LINES_H */
