/*
 * The SVG drawing of a trace: a sequence diagram, drawn like the protocol
 * figure of the verbs README: one vertical lane per node, time flowing
 * down, an arrow per RDMA write from its post to its delivery.
 *
 * Time is compressed: each drawn event gets its own row, in execution
 * order, whatever the virtual time between them; the time is written in
 * the left margin whenever it changes, and a long idle stretch gets a
 * dashed break.  Arrows come from the simulator (what really moved, even
 * under faults); their labels come from the workload's event that follows
 * the post on the same node (which message, which request: its draw ops
 * say, and its legend gives the colours).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "show_int.h"

#define LANE_W 250
#define LEFT 130
#define TOP 96
#define ROW_H 16
#define GAP_H 22
#define GAP_NS 100000ull       /* idle longer than this gets a break */
#define TEXT_MAX 192

/* The colours every drawing has; the workload's come from its legend. */
static const char col_note[] = "#555555", col_other[] = "#333333";
#define C_ERROR show_col_error
#define C_NOTE col_note
#define C_OTHER col_other

enum row_kind {
	ROW_POST,
	ROW_DELIVER,
	ROW_NOTE,
	ROW_GAP,
};

struct row {
	enum row_kind kind;
	uint64_t t;
	uint32_t lane;
	size_t arrow;              /* POST, DELIVER */
	/* NOTE: consecutive equal notes on one lane at one time are merged */
	char cat;                  /* 'q' QP state, 'e' error CQE, else 0 */
	uint32_t qpn, qpn_hi;      /* QP notes: the QPs they cover */
	uint32_t count;
	const char *color;
	char text[TEXT_MAX];
};

struct arrow {
	uint32_t from, to;
	size_t row_post;
	size_t row_deliver;        /* SIZE_MAX: never delivered */
	uint64_t wr_id;
	uint32_t imm;
	bool has_imm;
	uint64_t len;
	bool labelled;
	bool ack;
	const char *color;
	double width;
	char label[TEXT_MAX];
};

struct svg {
	const struct show_trace *tr;
	const struct show_range *rg;
	struct row *rows;
	size_t nrows, rows_cap;
	struct arrow *arrows;
	size_t narrows, arrows_cap;
	size_t *last_post;         /* per node: its latest unlabelled arrow */
	bool truncated;            /* max_rows reached */
	bool cut;                  /* truncated, or --to before the end */
	int err;                   /* -ENOMEM: a row or arrow was lost */
	FILE *out;
};

/* A new row at time t; an idle gap before it gets a break row first. */
static struct row *add_row(struct svg *s, enum row_kind kind, uint64_t t,
			   uint32_t lane)
{
	struct row *r;

	if (s->nrows >= s->rg->max_rows) {
		s->truncated = true;
		return NULL;
	}
	if (tv_ju_grow((void **)&s->rows, s->nrows + 1, &s->rows_cap,
		 sizeof(*s->rows)))
		goto nomem;
	if (kind != ROW_GAP && s->nrows && t - s->rows[s->nrows - 1].t >= GAP_NS &&
	    t > s->rows[s->nrows - 1].t) {
		if (!add_row(s, ROW_GAP, t, 0))
			return NULL;
		if (tv_ju_grow((void **)&s->rows, s->nrows + 1, &s->rows_cap,
			 sizeof(*s->rows)))
			goto nomem;
	}
	r = &s->rows[s->nrows++];
	memset(r, 0, sizeof(*r));
	r->kind = kind;
	r->t = t;
	r->lane = lane;
	r->count = 1;
	return r;
nomem:
	/* A drawing with a row missing would be a wrong one: it fails. */
	s->err = -ENOMEM;
	return NULL;
}

/* Down to the nanosecond: rows a few ns apart must not look equal. */
static void fmt_time(uint64_t ns, char *buf, size_t cap)
{
	if (ns < 1000)
		snprintf(buf, cap, "%" PRIu64 " ns", ns);
	else if (ns < 1000000)
		snprintf(buf, cap, "%.3f us", (double)ns / 1e3);
	else if (ns < 1000000000)
		snprintf(buf, cap, "%.6f ms", (double)ns / 1e6);
	else
		snprintf(buf, cap, "%.9f s", (double)ns / 1e9);
}

/* ---- building rows from events ----------------------------------------- */

static void on_post(struct svg *s, const struct tv_tb_show_event *e)
{
	struct arrow *a;
	struct row *r;

	if (e->peer == TV_TB_SHOW_NONE || e->peer >= s->tr->nodes)
		return;
	if (tv_ju_grow((void **)&s->arrows, s->narrows + 1, &s->arrows_cap,
		       sizeof(*s->arrows))) {
		s->err = -ENOMEM;
		return;
	}
	r = add_row(s, ROW_POST, e->t, e->node);
	if (!r)
		return;
	a = &s->arrows[s->narrows];
	memset(a, 0, sizeof(*a));
	a->from = e->node;
	a->to = e->peer;
	a->row_post = s->nrows - 1;
	a->row_deliver = SIZE_MAX;
	a->wr_id = e->wr_id;
	a->imm = e->imm;
	a->has_imm = e->has_imm;
	a->len = e->len;
	a->color = C_OTHER;
	a->width = 1.2;
	snprintf(a->label, sizeof(a->label), "%s %" PRIu64 " B", e->op, e->len);
	r->arrow = s->narrows++;
	s->last_post[e->node] = r->arrow;
}

/* The oldest undelivered arrow peer -> node that this delivery matches. */
static void on_deliver(struct svg *s, const struct tv_tb_show_event *e)
{
	struct row *r;

	for (size_t k = 0; k < s->narrows; k++) {
		struct arrow *a = &s->arrows[k];

		if (a->row_deliver != SIZE_MAX || a->from != e->peer ||
		    a->to != e->node || a->wr_id != e->wr_id ||
		    a->has_imm != e->has_imm || a->imm != e->imm ||
		    a->len != e->len)
			continue;
		r = add_row(s, ROW_DELIVER, e->t, e->node);
		if (!r)
			return;
		r->arrow = k;
		a->row_deliver = s->nrows - 1;
		if (tv_tb_show_is_error(e->status))
			a->color = C_ERROR;
		return;
	}
}

/* The workload's style: its colour, or the error red. */
static const char *style_color(const struct svg *s, int style)
{
	const struct tv_tb_draw *d = s->tr->ops->draw;

	if (style < 0 || !d || (size_t)style >= d->nstyles)
		return C_ERROR;
	return d->styles[style].color;
}

static void label_arrow(struct svg *s, const struct tv_tb_show_event *e,
			const struct tv_tb_svg_mark *m)
{
	size_t k = s->last_post[e->node];
	struct arrow *a;

	if (k == SIZE_MAX)
		return;
	a = &s->arrows[k];
	s->last_post[e->node] = SIZE_MAX;
	a->labelled = true;
	a->color = style_color(s, m->style);
	a->ack = m->quiet;
	if (m->width > 0)
		a->width = m->width;
	snprintf(a->label, sizeof(a->label), "%s", m->text);
}

/*
 * Where a QP state change can be merged: a QP note of the same node at the
 * same time within the trailing run of QP notes (setting up a world moves
 * every QP through INIT, RTR, RTS at time 0: one line per node, not three
 * per QP).
 */
static struct row *qp_note_to_merge(struct svg *s, const struct tv_tb_show_event *e)
{
	for (size_t k = s->nrows; k-- > 0;) {
		struct row *r = &s->rows[k];

		if (r->kind != ROW_NOTE || r->cat != 'q' || r->t != e->t)
			return NULL;
		if (r->lane == e->node)
			return r;
	}
	return NULL;
}

static void merge_qp_note(struct row *r, const struct tv_tb_show_event *e)
{
	size_t used = strlen(r->text);

	r->count++;
	if (r->qpn == e->qpn && r->qpn_hi == e->qpn) {
		snprintf(r->text + used, sizeof(r->text) - used, " -> %s",
			 e->state);
	} else {
		if (e->qpn < r->qpn)
			r->qpn = e->qpn;
		if (e->qpn > r->qpn_hi)
			r->qpn_hi = e->qpn;
		snprintf(r->text, sizeof(r->text),
			 "QPs %u-%u -> %s (%u changes)", r->qpn, r->qpn_hi,
			 e->state, r->count);
	}
	if (!strcmp(e->state, "ERR"))
		r->color = C_ERROR;
}

/* A note; merged into an earlier row when it says the same thing. */
static void add_note(struct svg *s, const struct tv_tb_show_event *e, char cat,
		     const char *color, const char *text)
{
	struct row *prev = s->nrows ? &s->rows[s->nrows - 1] : NULL;
	struct row *r;

	if (cat == 'q' && (r = qp_note_to_merge(s, e))) {
		merge_qp_note(r, e);
		return;
	}
	if (cat == 'e' && prev && prev->kind == ROW_NOTE && prev->cat == cat &&
	    prev->lane == e->node && prev->t == e->t &&
	    !strcmp(prev->text, text)) {
		prev->count++;
		return;
	}
	r = add_row(s, ROW_NOTE, e->t, e->node);
	if (!r)
		return;
	r->cat = cat;
	r->qpn = e->qpn;
	r->qpn_hi = e->qpn;
	r->color = color;
	snprintf(r->text, sizeof(r->text), "%s", text);
}

static void on_sim(struct svg *s, const struct tv_tb_show_event *e)
{
	char text[TEXT_MAX];

	if (!strcmp(e->kind, "POST_SEND")) {
		on_post(s, e);
	} else if (!strcmp(e->kind, "DELIVER")) {
		on_deliver(s, e);
	} else if (!strcmp(e->kind, "QP_STATE")) {
		snprintf(text, sizeof(text), "QP %u -> %s", e->qpn, e->state);
		add_note(s, e, 'q', strcmp(e->state, "ERR") ? C_NOTE : C_ERROR,
			 text);
	} else if (!strcmp(e->kind, "CQE") && tv_tb_show_is_error(e->status)) {
		snprintf(text, sizeof(text), "CQE %s (%s)", e->status, e->op);
		add_note(s, e, 'e', C_ERROR, text);
	} else if (!strcmp(e->kind, "RNR")) {
		snprintf(text, sizeof(text), "RNR from node %u", e->peer);
		add_note(s, e, 'e', C_ERROR, text);
	} else if (!strcmp(e->kind, "CQ_OVERFLOW")) {
		add_note(s, e, 0, C_ERROR, "CQ overflow");
	}
}

static void add_note(struct svg *s, const struct tv_tb_show_event *e, char cat,
		     const char *color, const char *text);

static void on_workload(struct svg *s, const struct tv_tb_show_event *e)
{
	const struct tv_tb_draw *d = s->tr->ops->draw;
	struct tv_tb_svg_mark m = { 0 };

	if (!d || !d->svg_event)
		return;
	d->svg_event(e, &m);
	if (m.kind == TV_TB_MARK_LABEL)
		label_arrow(s, e, &m);
	else if (m.kind == TV_TB_MARK_NOTE)
		add_note(s, e, 0, style_color(s, m.style), m.text);
}

static int build_rows(struct svg *s)
{
	for (size_t k = 0; k < s->tr->nev && !s->truncated && !s->err; k++) {
		const struct tv_tb_show_event *e = &s->tr->ev[k];
		char text[TEXT_MAX];

		if (e->i < s->rg->first || e->i > s->rg->last ||
		    e->node >= s->tr->nodes)
			continue;
		if (e->src == TV_TB_SHOW_SIM) {
			on_sim(s, e);
		} else if (e->src == TV_TB_SHOW_WORKLOAD) {
			on_workload(s, e);
		} else {
			/* Other sources (fault injection) show as marks. */
			snprintf(text, sizeof(text), "%s %s",
				 strcmp(e->kind, "FIRE") ? e->kind : "fault",
				 e->name);
			add_note(s, e, 0, C_ERROR, text);
		}
	}
	return s->err;
}

/* ---- drawing ------------------------------------------------------------ */

static void put_text(FILE *out, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '&': fputs("&amp;", out); break;
		case '"': fputs("&quot;", out); break;
		default:
			/* Control bytes are not allowed in XML 1.0. */
			fputc((unsigned char)*s < 0x20 ? '?' : *s, out);
		}
	}
}

static double lane_x(uint32_t lane)
{
	return LEFT + LANE_W / 2.0 + (double)lane * LANE_W;
}

/* y of every row: rows are ROW_H apart, breaks GAP_H. */
static double *row_ys(const struct svg *s, double *bottom_p)
{
	double *y = malloc((s->nrows + 1) * sizeof(*y));
	double cur = TOP + ROW_H;

	if (!y)
		return NULL;
	for (size_t k = 0; k < s->nrows; k++) {
		y[k] = cur;
		cur += s->rows[k].kind == ROW_GAP ? GAP_H : ROW_H;
	}
	*bottom_p = cur + ROW_H;
	return y;
}

static void draw_head(const struct svg *s, double width, double height)
{
	const struct tv_tb_draw *d = s->tr->ops->draw;
	size_t nlegend = d ? d->nstyles : 0;
	FILE *out = s->out;

	fprintf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
		"font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"11\">\n",
		width, height);
	fprintf(out, "<defs>\n");
	for (size_t k = 0; k < nlegend; k++)
		fprintf(out, "<marker id=\"ah%zu\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" "
			"markerUnits=\"userSpaceOnUse\" markerWidth=\"9\" markerHeight=\"9\" orient=\"auto\">"
			"<path d=\"M0,0 L10,5 L0,10 z\" fill=\"%s\"/></marker>\n",
			k, d->styles[k].color);
	fprintf(out, "<marker id=\"ahx\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" "
		"markerUnits=\"userSpaceOnUse\" markerWidth=\"9\" markerHeight=\"9\" orient=\"auto\">"
		"<path d=\"M0,0 L10,5 L0,10 z\" fill=\"%s\"/></marker>\n</defs>\n",
		C_OTHER);
	fprintf(out, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
	fprintf(out, "<text x=\"10\" y=\"20\" font-size=\"14\" font-weight=\"bold\">");
	put_text(out, s->tr->scenario_name[0] ? s->tr->scenario_name : s->tr->path);
	fprintf(out, "</text>\n<text x=\"10\" y=\"38\" fill=\"#444\">seed %" PRIu64
		", result %s, %zu drawn rows%s</text>\n", s->tr->seed,
		s->tr->result[0] ? s->tr->result : "?", s->nrows,
		s->truncated ? " (truncated: use --from/--to or --max-rows)" : "");
	for (size_t k = 0; k < nlegend; k++)
		fprintf(out, "<line x1=\"%zu\" y1=\"52\" x2=\"%zu\" y2=\"52\" stroke=\"%s\" stroke-width=\"3\"/>"
			"<text x=\"%zu\" y=\"56\">%s</text>\n", 10 + k * 165,
			30 + k * 165, d->styles[k].color, 35 + k * 165,
			d->styles[k].what);
}

static void draw_lanes(const struct svg *s, double bottom)
{
	for (uint32_t n = 0; n < s->tr->nodes; n++) {
		double x = lane_x(n);

		fprintf(s->out, "<rect x=\"%.1f\" y=\"%d\" width=\"90\" height=\"20\" rx=\"4\" "
			"fill=\"#eef2f8\" stroke=\"#334\"/>"
			"<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" font-weight=\"bold\">node %u</text>\n",
			x - 45, TOP - 24, x, TOP - 10, n);
		fprintf(s->out, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#99a\" "
			"stroke-width=\"1\"/>\n", x, TOP - 4, x, bottom);
	}
}

/* Time in the margin when it changes; a dashed break for idle time. */
static void draw_times(const struct svg *s, const double *y, double width)
{
	uint64_t last = UINT64_MAX;
	char b[32];

	for (size_t k = 0; k < s->nrows; k++) {
		const struct row *r = &s->rows[k];

		if (r->kind == ROW_GAP) {
			fmt_time(r->t - s->rows[k - 1].t, b, sizeof(b));
			fprintf(s->out, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#bbb\" "
				"stroke-dasharray=\"6,4\"/><text x=\"%d\" y=\"%.1f\" fill=\"#888\" "
				"font-style=\"italic\">%s idle</text>\n", 4, y[k] - 4,
				width - 4, y[k] - 4, LEFT + 4, y[k] + 8, b);
			continue;
		}
		if (r->t == last)
			continue;
		last = r->t;
		fmt_time(r->t, b, sizeof(b));
		fprintf(s->out, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#f0f0f0\"/>"
			"<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" fill=\"#666\" font-size=\"10\">%s</text>\n",
			LEFT - 4, y[k], width - 4, y[k], LEFT - 8, y[k] + 3, b);
	}
}

/* The arrowhead of a colour: the legend's first of that colour. */
static void marker_of(const struct svg *s, const char *color, char *id,
		      size_t cap)
{
	const struct tv_tb_draw *d = s->tr->ops->draw;

	for (size_t k = 0; d && k < d->nstyles; k++) {
		if (!strcmp(d->styles[k].color, color)) {
			snprintf(id, cap, "ah%zu", k);
			return;
		}
	}
	snprintf(id, cap, "ahx");
}

/*
 * A label on a white box: lines are all drawn first, so every label stays
 * readable where arrows cross.  The box width is estimated (~5.6 px per
 * character at 10 px), since SVG cannot size a box to its text.
 */
static void draw_label(const struct svg *s, double x, double y, int dir,
		       const char *color, const char *text, const char *suffix)
{
	double w = (double)(strlen(text) + strlen(suffix)) * 5.6 + 4;

	fprintf(s->out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"12\" "
		"fill=\"white\" fill-opacity=\"0.85\"/>", dir > 0 ? x - 2 : x - w + 2,
		y - 9, w);
	fprintf(s->out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" fill=\"%s\" "
		"font-size=\"10\">", x, y, dir > 0 ? "start" : "end", color);
	put_text(s->out, text);
	put_text(s->out, suffix);
	fputs("</text>\n", s->out);
}

/*
 * Not delivered: if the drawing was cut short, the delivery may lie beyond
 * it (dashed to the bottom); otherwise it never happened (red, dashed,
 * half-way, "never delivered").
 */
static bool arrow_lost(const struct svg *s, const struct arrow *a)
{
	return a->row_deliver == SIZE_MAX && !s->cut;
}

static void draw_arrow(const struct svg *s, const struct arrow *a,
		       const double *y, double bottom)
{
	double x1 = lane_x(a->from), x2 = lane_x(a->to);
	double y1 = y[a->row_post], y2, xe = x2;
	bool open = a->row_deliver == SIZE_MAX, lost = arrow_lost(s, a);
	const char *color = lost ? C_ERROR : a->color;
	char marker[24];

	if (!open)
		y2 = y[a->row_deliver];
	else if (lost)
		y2 = y1 + ROW_H, xe = (x1 + x2) / 2;
	else
		y2 = bottom;
	marker_of(s, color, marker, sizeof(marker));
	fprintf(s->out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
		"stroke-width=\"%.1f\"%s marker-end=\"url(#%s)\"/>\n", x1, y1, xe,
		y2, color, a->width, open ? " stroke-dasharray=\"4,3\"" : "",
		marker);
}

static void draw_arrow_label(const struct svg *s, const struct arrow *a,
			     const double *y)
{
	int dir = a->to > a->from ? 1 : -1;
	bool lost = arrow_lost(s, a);

	if (a->ack && !lost)
		return;
	draw_label(s, lane_x(a->from) + dir * 8, y[a->row_post] - 3, dir,
		   lost ? C_ERROR : a->color, a->label,
		   lost ? " (never delivered)" : "");
}

static void draw_note(const struct svg *s, const struct row *r, double y)
{
	double x = lane_x(r->lane);

	char times[16] = "";

	if (r->cat == 'e' && r->count > 1)
		snprintf(times, sizeof(times), " x%u", r->count);
	fprintf(s->out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>",
		x, y, r->color);
	draw_label(s, x + 6, y + 3, 1, r->color, r->text, times);
}

static int draw(struct svg *s)
{
	/* Room on the right for the last lane's notes, and for the legend. */
	double width = LEFT + (double)s->tr->nodes * LANE_W + 200, bottom;
	double *y = row_ys(s, &bottom);

	if (!y)
		return -ENOMEM;
	if (width < 940)
		width = 940;
	draw_head(s, width, bottom + 10);
	draw_lanes(s, bottom);
	draw_times(s, y, width);
	for (size_t k = 0; k < s->narrows; k++)
		draw_arrow(s, &s->arrows[k], y, bottom);
	for (size_t k = 0; k < s->narrows; k++)
		draw_arrow_label(s, &s->arrows[k], y);
	for (size_t k = 0; k < s->nrows; k++)
		if (s->rows[k].kind == ROW_NOTE)
			draw_note(s, &s->rows[k], y[k]);
	fputs("</svg>\n", s->out);
	free(y);
	return ferror(s->out) ? -EIO : 0;
}

int show_svg(const struct show_trace *tr, const struct show_range *rg,
	     FILE *out)
{
	struct svg s = { .tr = tr, .rg = rg, .out = out };
	int rc = -ENOMEM;

	s.last_post = malloc(((size_t)tr->nodes + 1) * sizeof(*s.last_post));
	if (!s.last_post)
		return rc;
	for (uint32_t n = 0; n <= tr->nodes; n++)
		s.last_post[n] = SIZE_MAX;
	rc = build_rows(&s);
	s.cut = s.truncated || (tr->nev && rg->last < tr->ev[tr->nev - 1].i);
	if (!rc)
		rc = draw(&s);
	free(s.last_post);
	free(s.rows);
	free(s.arrows);
	return rc;
}
