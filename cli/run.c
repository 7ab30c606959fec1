/* `tensorverbs run`: one scenario on the simulator, every check on. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "plan.h"
#include "trace.h"

static const char run_usage[] =
	"usage: tensorverbs run [SCENARIO.json] [options]\n"
	"\n"
	"Builds a simulated world from the scenario (docs/scenarios.md), one\n"
	"engine per node, runs every send and recv at its virtual time until\n"
	"quiescence and checks every expectation and invariant.  Without a\n"
	"file, runs the built-in demo.\n"
	"\n"
	"options:\n"
	"  --seed N       seed of the run (default: the scenario's \"seed\")\n"
	"  --faults PLAN  inject faults (docs/faults.md): a JSON array of rules\n"
	"                 or \"point[:key=value,...][;point...]\"; a rule for a\n"
	"                 point the scenario's \"faults\" has replaces it\n"
	"  --quiet, -q    print nothing but failures (and --print-hash)\n"
	"  --print-hash   print the simulator's event hash: event-hash: 0x...\n"
	"  --trace FILE   write every event to FILE as JSON Lines, for\n"
	"                 `tensorverbs replay` and `tensorverbs show`\n"
	"  --verbose, -v  print every engine and simulator event\n"
	"  --help, -h     this text\n"
	"\n"
	"exit status: 0 all checks held, 1 a check failed, 2 bad usage or\n"
	"scenario.  A failure prints the command that reproduces it.\n"
	"\n"
	"TV_BREAK=no-ack-timeout in the environment breaks the engine on\n"
	"purpose (for testing swarm and shrink only; docs/swarm.md).\n";

struct run_args {
	const char *file;
	bool has_seed;
	uint64_t seed;
	bool quiet;
	bool print_hash;
	bool verbose;
	const char *trace_file;
	const char *faults;        /* --faults PLAN, as given */
	uint32_t breakage;         /* TV_BREAK */
};

static int parse_run_args(int argc, char **argv, struct run_args *a)
{
	static const struct option opts[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "print-hash", no_argument, NULL, 'H' },
		{ "trace", required_argument, NULL, 'T' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "faults", required_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	if (runner_breakage_from_env(&a->breakage)) {
		fprintf(stderr, "tensorverbs run: bad TV_BREAK '%s' (known: no-ack-timeout)\n",
			getenv("TV_BREAK"));
		return -EINVAL;
	}
	optind = 1;
	while ((c = getopt_long(argc, argv, "qvh", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (cli_parse_u64(optarg, &a->seed)) {
				fprintf(stderr, "tensorverbs run: bad --seed '%s'\n",
					optarg);
				return -EINVAL;
			}
			a->has_seed = true;
			break;
		case 'q': a->quiet = true; break;
		case 'H': a->print_hash = true; break;
		case 'T': a->trace_file = optarg; break;
		case 'v': a->verbose = true; break;
		case 'F': a->faults = optarg; break;
		case 'h': fputs(run_usage, stdout); return 1;
		default: fputs(run_usage, stderr); return -EINVAL;
		}
	}
	if (argc - optind > 1) {
		fprintf(stderr, "tensorverbs run: one scenario file at most\n");
		return -EINVAL;
	}
	a->file = optind < argc ? argv[optind] : NULL;
	return 0;
}

static void print_faults(const struct run_result *res)
{
	const struct tv_flt_point_info *pts;
	const struct tv_engine_stats *t = &res->total;
	size_t n, shown = 0;

	pts = tv_flt_points(&n);
	printf("faults      %" PRIu64 " fired", res->fault_fires);
	for (size_t i = 0; i < n && i < RUN_MAX_POINTS; i++)
		if (res->point_fires[i])
			printf("%s %s x%" PRIu64, shown++ ? "," : ":",
			       pts[i].name, res->point_fires[i]);
	printf("\n");
	printf("recovery    %" PRIu64 " ACK timeouts, %" PRIu64
	       " recv timeouts, %" PRIu64 " channel failures, %" PRIu64
	       " reconnects, %" PRIu64 " retries, %" PRIu64
	       " duplicates landed, %" PRIu64 " refused\n",
	       t->ack_timeouts, t->recv_timeouts, t->channel_failures,
	       t->reconnects, t->retries, res->dup_landed, res->refused);
	if (res->crashes)
		printf("crashes     %" PRIu64 " crashes, %" PRIu64
		       " restarts (%" PRIu64 " failed), %" PRIu64
		       " operations skipped (node down), %" PRIu64
		       " receives cancelled\n", res->crashes, res->restarts,
		       res->restart_failures, res->skipped_ops,
		       res->crash_cancelled);
}

/*
 * Two times: when the last recv completed, and when the world went quiet.
 * The clock runs on to the last event queued, often a timer armed long
 * before (an ACK timeout its ACK made moot still fires, into an idle
 * engine), so the second alone said "1.000 s" of the 2 ms demo.
 */
static void print_time(const struct run_result *res)
{
	char v[32], end[32];

	cli_fmt_ns((double)res->last_recv_ns, v, sizeof(v));
	cli_fmt_ns((double)res->virtual_ns, end, sizeof(end));
	if (res->last_recv_ns && res->last_recv_ns < res->virtual_ns)
		printf("time        %s virtual to the last recv; quiet at %s\n",
		       v, end);
	else
		printf("time        %s virtual\n", end);
}

static void print_summary(const struct scenario *sc,
			  const struct run_result *res)
{
	const struct tv_engine_stats *t = &res->total;
	char b[32], w[32], rate[32];

	cli_fmt_bytes((double)res->bytes_received, b, sizeof(b));
	cli_fmt_ns((double)res->wall_ns, w, sizeof(w));
	cli_fmt_rate(res->wall_ns ? (double)res->sim_events * 1e9 /
		     (double)res->wall_ns : 0, rate, sizeof(rate));
	printf("scenario    %s (%s)\n", sc->name, sc->origin);
	printf("seed        %" PRIu64 "\n", res->seed);
	printf("world       %u nodes, %zu steps, %zu sends, %zu recvs\n",
	       sc->nodes, sc->nsteps, sc->nsends, sc->nrecvs);
	printf("transfers   %" PRIu64 " ok, %" PRIu64 " error statuses, %s received\n",
	       res->recvs_ok, res->recvs_error, b);
	printf("messages    TENSOR_REQUEST %" PRIu64 ", META_DATA_UPDATE %" PRIu64
	       ", TENSOR_RE_REQUEST %" PRIu64 ", ERROR_STATUS %" PRIu64
	       ", ACKs %" PRIu64 " (%" PRIu64 " on tensor writes)\n",
	       t->msgs_sent[2], t->msgs_sent[0], t->msgs_sent[1],
	       t->msgs_sent[3], t->acks_sent, t->acks_ridden);
	printf("writes      %" PRIu64 " tensor writes (zero-copy %" PRIu64
	       ", staged %" PRIu64 "), %" PRIu64 " posts inline, proxy copies %"
	       PRIu64 ", checksum failures %" PRIu64 "\n",
	       t->tensor_writes, t->zero_copy_writes, t->staged_writes,
	       t->inline_posts, t->proxy_copies, t->checksum_failures);
	printf("checked     %" PRIu64 " tensor writes and %" PRIu64
	       " control messages against advertised buffers\n",
	       res->checked_writes, res->checked_msgs);
	if (scenario_has_faults(sc))
		print_faults(res);
	print_time(res);
	printf("events      %" PRIu64 " sim events in %s wall (%sevents/s)\n",
	       res->sim_events, w, rate);
}

void cli_put_shell_word(FILE *out, const char *w)
{
	/* Quote only if the shell would split or expand it. */
	if (!*w || strpbrk(w, " \t\n'\"$\\;&|<>()*?[]{}~`!#")) {
		fputc('\'', out);
		for (; *w; w++) {
			if (*w == '\'')
				fputs("'\\''", out);
			else
				fputc(*w, out);
		}
		fputc('\'', out);
	} else {
		fputs(w, out);
	}
}

static void print_repro(const char *argv0, const struct run_args *a,
			uint64_t seed)
{
	fprintf(stderr, "reproduce: ");
	if (a->breakage)
		fprintf(stderr, "TV_BREAK=%s ",
			runner_breakage_name(a->breakage));
	fprintf(stderr, "%s run", argv0);
	if (a->file) {
		fputc(' ', stderr);
		cli_put_shell_word(stderr, a->file);
	}
	if (a->faults) {
		fputs(" --faults ", stderr);
		cli_put_shell_word(stderr, a->faults);
	}
	fprintf(stderr, " --seed %" PRIu64 "\n", seed);
}

/* The scenario, and its JSON as parsed: a trace embeds the latter. */
static int load(const struct run_args *a, struct scenario **sc_p,
		json_t **root_p)
{
	const char *origin = a->file ? a->file : "built-in demo";
	size_t flags = JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL;
	char err[SC_ERR_MAX];
	json_error_t jerr;
	json_t *root;
	int rc = -EINVAL;

	if (a->file)
		root = json_load_file(a->file, flags, &jerr);
	else
		root = json_loads(cli_demo_scenario, flags, &jerr);
	if (!root)
		snprintf(err, sizeof(err), "%s:%d:%d: invalid JSON: %s", origin,
			 jerr.line, jerr.column, jerr.text);
	else
		rc = scenario_from_json(root, origin, sc_p, err);
	if (rc) {
		fprintf(stderr, "tensorverbs run: invalid scenario %s: %s\n",
			a->file ? a->file : "(demo)", err);
		json_decref(root);
		return rc;
	}
	rc = plan_apply_option(*sc_p, a->faults, "run");
	if (rc) {
		scenario_free(*sc_p);
		json_decref(root);
		return rc;
	}
	*root_p = root;
	return 0;
}

/* ---- --trace FILE ------------------------------------------------------ */

struct run_trace {
	FILE *f;
	struct trace_rec rec;
};

static int emit_line(void *ctx, json_t *ev)
{
	return trace_write_line(ctx, ev);
}

static int trace_open(const struct run_args *a, uint64_t seed, json_t *root,
		      json_t *plan, struct run_trace *rt)
{
	json_t *hdr;
	int rc;

	rt->f = fopen(a->trace_file, "w");
	if (!rt->f) {
		rc = -errno;
		goto report;
	}
	rc = trace_header_new(seed, root, a->file, plan,
			      runner_breakage_name(a->breakage), &hdr);
	if (rc)
		goto close_file;
	rc = trace_write_line(rt->f, hdr);
	json_decref(hdr);
	if (rc)
		goto close_file;
	trace_rec_init(&rt->rec, emit_line, rt->f);
	return 0;
close_file:
	fclose(rt->f);
	rt->f = NULL;
report:
	fprintf(stderr, "tensorverbs run: cannot write trace %s: %s\n",
		a->trace_file, strerror(-rc));
	return rc;
}

static int trace_close(struct run_trace *rt, const char *path,
		       const struct run_result *res,
		       const struct failures *fails)
{
	json_t *sum;
	int rc = rt->rec.err;

	if (!rc)
		rc = trace_summary_new(&rt->rec, res, fails, &sum);
	if (!rc) {
		rc = trace_write_line(rt->f, sum);
		json_decref(sum);
	}
	if (fclose(rt->f) && !rc)
		rc = -EIO;
	rt->f = NULL;
	trace_rec_fini(&rt->rec);
	if (rc)
		fprintf(stderr, "tensorverbs run: cannot write trace %s: %s\n",
			path, strerror(-rc));
	return rc;
}

static void report(const struct run_args *a, const struct scenario *sc,
		   const struct run_result *res, int rc)
{
	if (rc)
		fprintf(stderr, "tensorverbs run: %s\n", strerror(-rc));
	else if (!a->quiet)
		print_summary(sc, res);
	if (a->print_hash && !rc)
		printf("event-hash: 0x%016" PRIx64 "\n", res->event_hash);
}

int cli_run(int argc, char **argv, const char *argv0)
{
	struct run_args a = { 0 };
	struct failures fails = { 0 };
	struct run_result res = { 0 };
	struct run_opts opts = { 0 };
	struct run_trace rt = { 0 };
	struct scenario *sc;
	json_t *root;
	int rc = parse_run_args(argc, argv, &a), exit_code;

	if (rc)
		return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	if (load(&a, &sc, &root))
		return CLI_EXIT_USAGE;
	opts.seed = a.has_seed ? a.seed : sc->seed;
	opts.verbose = a.verbose;
	opts.test_breakage = a.breakage;
	if (a.trace_file &&
	    trace_open(&a, opts.seed, root,
		       scenario_has_faults(sc) ? sc->faults : NULL, &rt)) {
		exit_code = CLI_EXIT_USAGE;
		goto free_scenario;
	}
	opts.rec = rt.f ? &rt.rec : NULL;
	rc = runner_run(sc, &opts, &fails, &res);
	if (rc)
		res.failures = 1;
	report(&a, sc, &res, rc);
	failures_print(&fails, stderr);
	if (!a.quiet || res.failures)
		printf("result      %s\n", res.failures ? "FAIL" : "PASS");
	if (res.failures)
		print_repro(argv0, &a, opts.seed);
	exit_code = res.failures ? CLI_EXIT_FAIL : CLI_EXIT_OK;
	if (rt.f && trace_close(&rt, a.trace_file, &res, &fails))
		exit_code = CLI_EXIT_USAGE;
	failures_free(&fails);
free_scenario:
	scenario_free(sc);
	json_decref(root);
	return exit_code;
}
