/*
 * flame.c - folded stacks and flame graphs.
 *
 * A flame graph is built from folded stacks (what `sonde export --format
 * folded` writes): the stacks are merged into a tree, children ordered by name,
 * and every frame at least 0.05 % of the total wide is drawn, the root at the
 * bottom. The SVG carries its own script: click a frame to zoom into it, click
 * "Reset zoom" (or press Escape) to go back, "Search" to highlight frames whose
 * name matches and see their share; every frame has a tooltip. A differential
 * flame graph draws the target's stacks and colours each frame by the change of
 * its share of the total against the baseline: red grew, blue shrank.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "../grow.h"
#include "../strmap.h"
#include "views.h"

/* A frame's name in folded form: ';' and newlines would break the format. */
static void add_frame(struct sonde_strbuf *sb, const char *fn)
{
	for (; fn && *fn; fn++)
		sonde_strbuf__addch(sb, *fn == ';' || *fn == '\n' || *fn == '\r' ? '_' : *fn);
}

/*
 * Memory profiles: one stack per allocating resource, weighed by bytes or count.
 * One root convention: a stack that passes through main starts at main (what
 * called it, _start and __libc_start_main, is left out, as a walk that stops
 * at main never has it); a thread's stack starts at its outermost frame.
 * Stacks of no weight are left out.
 */
static int memory_folded(const struct sonde_profile *p, const char *weight,
			 struct sonde_strbuf *out)
{
	size_t n = sonde_profile__resource_count(p), i, j, top, nlines = 0, cap = 0;
	struct sonde_strmap index = SONDE_STRMAP_INIT; /* line -> its place in lines */
	struct folded_line {
		char *text;
		json_int_t w;
	} *lines = NULL;	 /* in the order first seen */
	const char **fns = NULL; /* a stack's functions, innermost first */
	size_t fcap = 0;
	int err = 0;

	for (i = 0; i < n && !err; i++) {
		long depth = sonde_profile__fixed_strings(p, i, "trace", "function", &fns, &fcap);
		struct sonde_scalar sum, freed, w;
		uint64_t *at;
		bool hit;
		struct sonde_strbuf line = SONDE_STRBUF_INIT;

		/* read on the tape: no resource is made into a tree */
		if (depth == -ENOMEM) {
			err = -ENOMEM;
			break;
		}
		if (depth <= 0 || sonde_profile__fixed_scalar(p, i, "summary", &sum) < 0)
			continue;
		if (sonde_profile__fixed_member(p, i, "summary", "freed", &freed) < 0)
			continue; /* frees: the flame graph is of what was allocated */
		if (sonde_profile__fixed_member(p, i, "summary", weight, &w) != JSON_INTEGER ||
		    w.i <= 0)
			continue;
		top = (size_t)depth;
		for (j = (size_t)depth; j-- > 0;)
			if (fns[j] && !strcmp(fns[j], "main")) {
				top = j + 1;
				break;
			}
		for (j = top; j-- > 0;) {
			add_frame(&line, fns[j]);
			if (j)
				sonde_strbuf__addch(&line, ';');
		}
		if (!line.buf) {
			err = -ENOMEM;
			break;
		}
		at = sonde_strmap__upsert(&index, line.buf, line.len, &hit);
		if (at && hit) {
			lines[*at].w += (json_int_t)w.i;
		} else if (at && !sonde_grow((void **)&lines, &cap, nlines + 1, sizeof(*lines))) {
			*at = nlines;
			lines[nlines] = (struct folded_line){ sonde_strbuf__detach(&line, NULL),
							      (json_int_t)w.i };
			err = lines[nlines++].text ? 0 : -ENOMEM;
		} else {
			err = -ENOMEM;
		}
		sonde_strbuf__release(&line);
	}
	for (i = 0; i < nlines; i++) {
		if (!err)
			err |= sonde_strbuf__addf(out, "%s %lld\n", lines[i].text,
						  (long long)lines[i].w);
		free(lines[i].text);
	}
	free(lines);
	free(fns);
	sonde_strmap__release(&index);
	if (err)
		return -ENOMEM;
	return nlines || out->len ? 0 : -ENOTSUP;
}

int sonde_view__folded(const struct sonde_profile *p, const char *weight, struct sonde_strbuf *out)
{
	/* count, calls and samples: how many (of the profile's kind), not how much */
	bool count =
		!strcmp(weight, "count") || !strcmp(weight, "calls") || !strcmp(weight, "samples");

	if (sonde_profile__part(p, "trace"))
		return view_trace_folded(p, count, out, add_frame);
	/* memory: the allocating sites' summary members (what is left at the
	 * end, what each held at the peak), or bytes/count allocated */
	if (!strcmp(weight, "leaked") || !strcmp(weight, "leaked_bytes") ||
	    !strcmp(weight, "peak_bytes"))
		return memory_folded(p, weight, out);
	return memory_folded(p, count ? "count" : "bytes", out);
}

const char *sonde_view__flame_weight(const struct sonde_profile *p, const char **unit)
{
	bool trace = sonde_profile__part(p, "trace") != NULL;

	*unit = trace ? "ns" : "B";
	return trace ? "time" : "bytes";
}

struct fnode {
	const char *name;
	size_t parent, first, next; /* first child, next sibling (0: none; 0 is the root) */
	unsigned depth;
	double total, base;
	double x; /* left edge, a fraction of the root */
};

struct ftree {
	struct fnode *v;
	size_t n, cap;
	struct sonde_strmap index; /* parent (its bytes) and name -> node */
	struct sonde_strbuf key;   /* (reused) */
	char *text;
	unsigned depth;
};

static void tree_free(struct ftree *t)
{
	free(t->v);
	sonde_strmap__release(&t->index);
	sonde_strbuf__release(&t->key);
	free(t->text);
}

static long child(struct ftree *t, size_t parent, const char *name, bool create)
{
	struct sonde_strbuf *k = &t->key;
	uint64_t *at;
	bool hit;
	long id;

	sonde_strbuf__reset(k);
	if (sonde_strbuf__add(k, &parent, sizeof(parent)) || sonde_strbuf__adds(k, name))
		return -ENOMEM;
	if (!create) {
		at = sonde_strmap__get(&t->index, k->buf, k->len);
		return at ? (long)*at : -ENOENT;
	}
	at = sonde_strmap__upsert(&t->index, k->buf, k->len, &hit);
	if (!at)
		return -ENOMEM;
	if (hit)
		return (long)*at;
	if (sonde_grow((void **)&t->v, &t->cap, t->n + 1, sizeof(*t->v)))
		return -ENOMEM;
	*at = t->n;
	id = (long)t->n++;
	t->v[id] = (struct fnode){ .name = name, .parent = parent };
	t->v[id].depth = t->v[parent].depth + 1;
	t->depth = t->v[id].depth > t->depth ? t->v[id].depth : t->depth;
	t->v[id].next = t->v[parent].first;
	t->v[parent].first = (size_t)id;
	return id;
}

/* Parse folded stacks into a tree; the text is copied and cut in place. */
static int tree_build(struct ftree *t, const char *folded)
{
	char *line, *save = NULL;

	memset(t, 0, sizeof(*t));
	sonde_strbuf__init(&t->key);
	t->text = strdup(folded ? folded : "");
	if (!t->text || sonde_grow((void **)&t->v, &t->cap, 1, sizeof(*t->v)))
		return -ENOMEM;
	t->n = 1;
	t->v[0].name = "all";
	for (line = strtok_r(t->text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *sp = strrchr(line, ' '), *end, *f, *fs = NULL;
		double w;
		size_t cur = 0;

		if (!sp)
			continue;
		*sp = 0;
		w = strtod(sp + 1, &end);
		if (end == sp + 1 || !(w > 0))
			continue;
		t->v[0].total += w;
		for (f = strtok_r(line, ";", &fs); f; f = strtok_r(NULL, ";", &fs)) {
			long c = child(t, cur, f, true);

			if (c < 0)
				return (int)c;
			cur = (size_t)c;
			t->v[cur].total += w;
		}
	}
	return 0;
}

static int by_name(const void *a, const void *b, void *arg)
{
	const struct fnode *v = arg;

	return strcmp(v[*(const size_t *)a].name, v[*(const size_t *)b].name);
}

/* Left edges: children in name order, side by side under their parent. */
static int layout(struct ftree *t)
{
	size_t *kids = malloc(t->n * sizeof(*kids)), i;

	if (!kids)
		return -ENOMEM;
	t->v[0].x = 0;
	for (i = 0; i < t->n; i++) { /* parents come before their children */
		size_t k = 0, c;
		double x = t->v[i].x;

		for (c = t->v[i].first; c; c = t->v[c].next)
			kids[k++] = c;
		qsort_r(kids, k, sizeof(*kids), by_name, t->v);
		for (c = 0; c < k; c++) {
			t->v[kids[c]].x = x;
			x += t->v[0].total > 0 ? t->v[kids[c]].total / t->v[0].total : 0;
		}
	}
	free(kids);
	return 0;
}

#define FLAME_W	     1200
#define FRAME_H	     16
#define PAD	     10
#define TOP	     44
#define BOTTOM	     28
#define MIN_FRACTION 0.0005

static const char flame_css[] =
	"svg.sonde-flame text{font-family:Verdana,sans-serif;font-size:12px;fill:#222}"
	"svg.sonde-flame g.f{cursor:pointer}"
	"svg.sonde-flame g.f text{font-family:monospace;font-size:11px;pointer-events:none}"
	"svg.sonde-flame g.f:hover rect{stroke:#000;stroke-width:0.5}"
	"svg.sonde-flame .button{cursor:pointer;fill:#25c}"
	"svg.sonde-flame .reset{opacity:0.3}";

/* The script every flame graph carries; it initialises each SVG once. */
static const char flame_js[] =
	"(function(){\n"
	"var svgs=document.querySelectorAll('svg.sonde-flame');\n"
	"for(var i=0;i<svgs.length;i++)if(!svgs[i].getAttribute('data-ready'))init(svgs[i]);\n"
	"function init(svg){\n"
	" svg.setAttribute('data-ready','1');\n"
	" var W=+svg.getAttribute('data-width'),P=+svg.getAttribute('data-pad'),U=W-2*P;\n"
	" var fr=[].slice.call(svg.querySelectorAll('g.f')),det=svg.querySelector('.details');\n"
	" var rb=svg.querySelector('.reset'),mt=svg.querySelector('.matched');\n"
	" function num(g,a){return +g.getAttribute(a);}\n"
	" function place(g,x,w){var r=g.querySelector('rect'),t=g.querySelector('text');\n"
	"  "
	"r.setAttribute('x',(P+x*U).toFixed(2));r.setAttribute('width',Math.max(0,w*U-0.5).toFixed("
	"2));\n"
	"  t.setAttribute('x',(P+x*U+3).toFixed(2));var "
	"n=g.getAttribute('data-n'),c=Math.floor((w*U-6)/7);\n"
	"  t.textContent=c<3?'':(n.length<=c?n:n.slice(0,c-2)+'..');}\n"
	" function show(g,on){g.style.display=on?'':'none';}\n"
	" function zoom(z){var x0=num(z,'data-x'),w0=num(z,'data-w'),d0=num(z,'data-d'),e=1e-9;\n"
	"  fr.forEach(function(g){var x=num(g,'data-x'),w=num(g,'data-w'),d=num(g,'data-d');\n"
	"   "
	"if(d>=d0&&x>=x0-e&&x+w<=x0+w0+e){show(g,1);place(g,(x-x0)/w0,w/w0);g.style.opacity='';}\n"
	"   else if(d<d0&&x<=x0+e&&x+w>=x0+w0-e){show(g,1);place(g,0,1);g.style.opacity='0.6';}\n"
	"   else show(g,0);});\n"
	"  rb.style.opacity=1;svg.setAttribute('data-zoomed',z.getAttribute('data-n'));}\n"
	" function reset(){fr.forEach(function(g){show(g,1);g.style.opacity='';\n"
	"  place(g,num(g,'data-x'),num(g,'data-w'));});rb.style.opacity=0.3;\n"
	"  svg.removeAttribute('data-zoomed');}\n"
	" function search(term){var re;try{re=new RegExp(term);}catch(e){\n"
	"  re=new RegExp(term.replace(/[.*+?^${}()|[\\]\\\\]/g,'\\\\$&'));}\n"
	"  var m=[];fr.forEach(function(g){var r=g.querySelector('rect');\n"
	"   if(!r.getAttribute('data-fill'))r.setAttribute('data-fill',r.getAttribute('fill'));\n"
	"   var hit=term!==''&&re.test(g.getAttribute('data-n'));\n"
	"   r.setAttribute('fill',hit?'rgb(230,0,230)':r.getAttribute('data-fill'));\n"
	"   if(hit)m.push([num(g,'data-x'),num(g,'data-w')]);});\n"
	"  m.sort(function(a,b){return a[0]-b[0];});var s=0,end=-1;\n"
	"  m.forEach(function(a){if(a[0]>=end-1e-12){s+=a[1];end=a[0]+a[1];}});\n"
	"  mt.textContent=term===''?'':'Matched: '+(100*s).toFixed(2)+'%';return s;}\n"
	" fr.forEach(function(g){g.addEventListener('click',function(ev){zoom(g);ev."
	"stopPropagation();});\n"
	"  "
	"g.addEventListener('mouseover',function(){det.textContent=g.querySelector('title')."
	"textContent;});\n"
	"  g.addEventListener('mouseout',function(){det.textContent=' ';});});\n"
	" rb.addEventListener('click',reset);\n"
	" svg.querySelector('.search').addEventListener('click',function(){\n"
	"  var t=window.prompt('Search frames (a regular "
	"expression)','');if(t!==null)search(t);});\n"
	" svg.addEventListener('keydown',function(e){if(e.key==='Escape')reset();});\n"
	" document.addEventListener('keydown',function(e){if(e.key==='Escape')reset();});\n"
	" svg.sondeZoom=zoom;svg.sondeReset=reset;svg.sondeSearch=search;\n"
	"}})();\n";

static void diff_color(double share, double base_share, bool in_base, char out[24])
{
	double r, a;

	if (!in_base || base_share <= 0) {
		snprintf(out, 24, "rgb(220,40,40)");
		return;
	}
	r = share / base_share;
	a = fmin(1, fabs(log2(r)) / 2); /* 4x (or 1/4) is full colour */
	if (r >= 1)
		snprintf(out, 24, "rgb(%d,%d,%d)", 255, (int)(235 - 195 * a), (int)(235 - 195 * a));
	else
		snprintf(out, 24, "rgb(%d,%d,%d)", (int)(235 - 195 * a), (int)(235 - 195 * a), 255);
}

int sonde_view__flame(const char *folded, const char *basefolded, const char *title,
		      const char *unit, struct sonde_strbuf *out)
{
	struct ftree t, b = { 0 };
	size_t i, *base_of = NULL;
	int rc, height;
	double total;
	char v1[40], v2[40], color[24];
	const char *palette = unit && !strcmp(unit, "B") ? "green" : "warm";

	rc = tree_build(&t, folded);
	if (!rc && basefolded)
		rc = tree_build(&b, basefolded);
	if (!rc)
		rc = layout(&t);
	if (!rc && basefolded) {
		base_of = calloc(t.n, sizeof(*base_of)); /* 0: not in the baseline (but root) */
		if (!base_of)
			rc = -ENOMEM;
		for (i = 1; !rc && i < t.n; i++) {
			size_t bp = base_of[t.v[i].parent];
			long c =
				(bp || t.v[i].parent == 0) ? child(&b, bp, t.v[i].name, false) : -1;

			base_of[i] = c > 0 ? (size_t)c : 0;
			if (c > 0)
				t.v[i].base = b.v[c].total;
		}
		t.v[0].base = b.v[0].total;
	}
	if (rc)
		goto out;
	total = t.v[0].total;
	if (!(total > 0)) {
		rc = -EINVAL;
		goto out;
	}
	height = TOP + (int)(t.depth + 1) * FRAME_H + BOTTOM;
	rc |= sonde_strbuf__addf(
		out,
		"<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"sonde-flame\" "
		"width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" data-width=\"%d\" "
		"data-pad=\"%d\" data-total=\"%.17g\">\n<style>%s</style>\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"#f8f8f4\"/>\n"
		"<text x=\"%d\" y=\"20\" font-size=\"15\">",
		FLAME_W, height, FLAME_W, height, FLAME_W, PAD, total, flame_css,
		FLAME_W / 2 - 200);
	rc |= sonde_view__escape(out, title);
	rc |= sonde_strbuf__addf(
		out,
		"</text>\n<text class=\"button reset\" x=\"%d\" y=\"36\">Reset zoom</text>\n"
		"<text class=\"button search\" x=\"%d\" y=\"36\">Search</text>\n"
		"<text class=\"matched\" x=\"%d\" y=\"36\"> </text>\n"
		"<text class=\"details\" x=\"%d\" y=\"%d\"> </text>\n<g class=\"frames\">\n",
		PAD, FLAME_W - PAD - 60, FLAME_W - PAD - 260, PAD, height - 10);
	for (i = 0; i < t.n && !rc; i++) {
		const struct fnode *f = &t.v[i];
		double w = f->total / total, x = f->x;
		int y = height - BOTTOM - (int)(f->depth + 1) * FRAME_H, chars;
		char pct[32];

		if (w < MIN_FRACTION)
			continue;
		sonde_format__value(f->total, unit, v1, sizeof(v1));
		snprintf(pct, sizeof(pct), "%.2f%%", 100 * w);
		if (basefolded) {
			double bs = b.v[0].total > 0 ? f->base / b.v[0].total : 0;

			diff_color(w, bs, i == 0 || base_of[i], color);
		} else {
			sonde_view__color(f->name, i ? palette : "cool", color);
		}
		rc |= sonde_strbuf__adds(out, "<g class=\"f\" data-n=\"");
		rc |= sonde_view__escape(out, f->name);
		rc |= sonde_strbuf__addf(out,
					 "\" data-x=\"%.9f\" data-w=\"%.9f\" data-d=\"%u\" "
					 "data-v=\"%.17g\"><title>",
					 x, w, f->depth, f->total);
		rc |= sonde_view__escape(out, f->name);
		rc |= sonde_strbuf__addf(out, " (%s, %s", v1, pct);
		if (basefolded) {
			double bs = b.v[0].total > 0 ? f->base / b.v[0].total : 0;

			if (i == 0 || base_of[i]) {
				sonde_format__value(f->base, unit, v2, sizeof(v2));
				rc |= sonde_strbuf__addf(out,
							 "; baseline %s, %.2f%%; share %+.2f pts",
							 v2, 100 * bs, 100 * (w - bs));
			} else {
				rc |= sonde_strbuf__adds(out, "; not in the baseline");
			}
		}
		rc |= sonde_strbuf__addf(out,
					 ")</title><rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" "
					 "height=\"%d\" rx=\"2\" fill=\"%s\"/><text x=\"%.2f\" "
					 "y=\"%d\">",
					 PAD + x * (FLAME_W - 2 * PAD), y,
					 fmax(0, w * (FLAME_W - 2 * PAD) - 0.5), FRAME_H - 1, color,
					 PAD + x * (FLAME_W - 2 * PAD) + 3, y + 12);
		chars = (int)((w * (FLAME_W - 2 * PAD) - 6) / 7);
		if (chars >= 3) {
			size_t len = strlen(f->name);

			if (len <= (size_t)chars) {
				rc |= sonde_view__escape(out, f->name);
			} else {
				/* Cut on a UTF-8 character boundary. */
				char cut[512];
				size_t m = (size_t)chars - 2 < sizeof(cut) - 1 ? (size_t)chars - 2
									       : sizeof(cut) - 1;

				while (m && ((unsigned char)f->name[m] & 0xC0) == 0x80)
					m--;
				memcpy(cut, f->name, m);
				cut[m] = 0;
				rc |= sonde_view__escape(out, cut);
				rc |= sonde_strbuf__adds(out, "..");
			}
		}
		rc |= sonde_strbuf__adds(out, "</text></g>\n");
	}
	rc |= sonde_strbuf__addf(out, "</g>\n<script><![CDATA[\n%s]]></script>\n</svg>\n",
				 flame_js);
out:
	free(base_of);
	tree_free(&t);
	if (basefolded)
		tree_free(&b);
	return rc < 0 ? rc : rc ? -ENOMEM : 0;
}
