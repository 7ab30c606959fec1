#include <stdio.h>
#include "cli.h"
#include "serve.h"
int cli_serve(int argc, char **argv, const char *argv0)
{
	(void)argc; (void)argv; (void)argv0;
	fprintf(stderr, "serve: not yet\n");
	return 2;
}
