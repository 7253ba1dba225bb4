// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * A small, bounded mutation driver for the fuzz targets, so that ctest can
 * run each one briefly with gcc's sanitizers and no libFuzzer. Inputs are
 * seeds (files, the target's built-in ones, the corpus kept by earlier
 * runs) after a few byte flips, inserts, deletes and splices, and mutants
 * of mutants. The target's code is built with gcc's
 * -fsanitize-coverage=trace-pc: a mutant that takes an edge no input took
 * before is kept, mutated further and written to the corpus directory
 * for the next runs. Each run draws a fresh random seed (printed): with
 * the same seed, seed files and corpus the sequence is the same; the time
 * limit only cuts it short.
 *
 *   fuzz_T [-n RUNS] [-t SECONDS] [-s SEED] [-d SEEDDIR]... [-c DIR|-]
 *          [FILE]...
 *   fuzz_T -w DIR    write the built-in seeds into DIR
 *
 * -c: the corpus, read and grown (default $MIGR_CACHE/fuzz/T, MIGR_CACHE
 * being ~/.cache/migr unless set; "-": none). Never required: one that
 * is missing and cannot be made, or cannot be written, is only noted.
 * With FILEs, runs each once (to replay a crash). A finding aborts; the
 * input is written to crash-T in the working directory first.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "corpus.h"
#include "fuzz.h"

#define INPUT_MAX 16384
#define SEEDS_MAX 4096 /* files, built-in ones, the corpus, new ones */
#define RING 64 /* recent mutants, mutated further */
#define CORPUS_MAX 1000 /* files in a target's corpus directory */
#define CORPUS_RUN_MAX 200 /* written by one run */

struct input {
	uint8_t *p;
	size_t n;
};

static struct input seeds[SEEDS_MAX], ring[RING];
static int nseeds, nring;
static uint64_t rng;
static const char *prog = "fuzz";
static char crash_path[256];

/* The input being run, for the crash dump */
static const uint8_t *volatile cur;
static volatile size_t cur_len;

/* xorshift64*: enough for choosing mutations, same on every host */
static uint64_t rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545f4914f6cdd1dULL;
}

static size_t below(size_t n)
{
	return n ? rnd() % n : 0;
}

static void add_seed(const void *buf, size_t len)
{
	uint8_t *p;

	if (nseeds == SEEDS_MAX || len > INPUT_MAX)
		return;
	p = malloc(len + 1);
	if (!p)
		abort();
	memcpy(p, buf, len);
	seeds[nseeds].p = p;
	seeds[nseeds++].n = len;
}

static int read_file(const char *path, void (*fn)(const void *, size_t))
{
	static uint8_t buf[INPUT_MAX];
	FILE *f = fopen(path, "rb");
	size_t n;

	if (!f) {
		fprintf(stderr, "%s: cannot read %s\n", prog, path);
		return -1;
	}
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	fn(buf, n);
	return 0;
}

static int visible(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

/*
 * Sorted, so that the sequence does not depend on the file system: how
 * many files, or -1 if there is no directory
 */
static int load_dir(const char *dir)
{
	struct dirent **names;
	char path[4096];
	struct stat st;
	int i, n, k = 0;

	n = scandir(dir, &names, visible, alphasort);
	if (n < 0)
		return -1;
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
		if (!stat(path, &st) && S_ISREG(st.st_mode) &&
		    !read_file(path, add_seed))
			k++;
		free(names[i]);
	}
	free(names);
	return k;
}

/* From a signal handler or a sanitizer's death callback: write(2) only */
static void dump_input(void)
{
	static const char msg[] = ": the failing input is in ";
	const uint8_t *p = cur;
	ssize_t rc;
	int fd;

	if (!p)
		return;
	cur = NULL;
	fd = open(crash_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return;
	rc = write(fd, p, cur_len);
	close(fd);
	rc = write(2, prog, strlen(prog));
	rc = write(2, msg, sizeof(msg) - 1);
	rc = write(2, crash_path, strlen(crash_path));
	rc = write(2, "\n", 1);
	(void)rc;
}

static void on_signal(int sig)
{
	dump_input();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Present when a sanitizer runtime is linked in */
extern void __sanitizer_set_death_callback(void (*cb)(void))
	__attribute__((weak));

/*
 * Run one input from an exact-size heap copy (ASan sees every over-read):
 * how many edges it took first
 */
static unsigned int run(const uint8_t *buf, size_t n)
{
	uint8_t *p = malloc(n ? n : 1);

	if (!p)
		abort();
	memcpy(p, buf, n);
	cur_len = n;
	cur = p;
	cov_begin();
	LLVMFuzzerTestOneInput(p, n);
	cur = NULL;
	free(p);
	return cov_new();
}

static void run_file(const void *buf, size_t n)
{
	run(buf, n);
}

/* Bytes parsers care about, and a few words of migrd's inputs */
static const uint8_t special[] = { 0,	 0x1f, 0x7f, 0x80, 0xbf, 0xc3, 0xed,
				   0xf0, 0xff, '"',  '\\', ' ',	 '\n', '.',
				   '-',	 '0',  '9',  'e',  'u',	 '{',  '}',
				   '[',	 ']',  ':',  ',',  '/',	 'a',  'f' };
static const char *const words[] = {
	"true",
	"false",
	"null",
	"\\u0000",
	"\\u001b",
	"\\ud83d",
	"\\ude00",
	"1e999",
	"-0",
	"1.5e-3",
	"4294967296",
	"16777215",
	"16777216",
	"4194305",
	" . ",
	"migrd/1 ",
	"partner ",
	"udpeers ",
	"status ",
	"switch ",
	"prepare ",
	"reconnect ",
	"keys ",
	"\"ok\":",
	"{\"a\":",
	"[[[[",
	"]]]]",
	"20010db8000000000000000000000001",
	"::ffff:1.2.3.4",
	"-1",
	"9223372036854775808",
	"18446744073709551615",
	"mig-put 0123456789abcdef ",
	"mig-check ",
	"host,-,-,-",
	"file ",
	"link parent ../",
	"end ",
	"fetch ",
	"give ",
	"moved ",
	":ffffff,",
};

static void insert(uint8_t *b, size_t *n, size_t at, const void *src,
		   size_t len)
{
	if (*n + len > INPUT_MAX)
		len = INPUT_MAX - *n;
	memmove(b + at + len, b + at, *n - at);
	memcpy(b + at, src, len);
	*n += len;
}

static void mutate_once(uint8_t *b, size_t *n)
{
	uint8_t tmp[64];
	size_t at = below(*n + 1), len, k;
	const struct input *o;
	const char *w;

	switch (below(*n ? 10 : 3)) {
	case 0: /* insert random or special bytes */
		len = 1 + below(8);
		for (k = 0; k < len; k++)
			tmp[k] = rnd() & 1 ? (uint8_t)rnd() :
					     special[below(sizeof(special))];
		insert(b, n, at, tmp, len);
		break;
	case 1: /* insert a word */
		w = words[below(sizeof(words) / sizeof(words[0]))];
		insert(b, n, at, w, strlen(w));
		break;
	case 2: /* splice in a piece of another seed */
		o = &seeds[below(nseeds)];
		if (!o->n)
			break;
		k = below(o->n);
		len = 1 + below(o->n - k);
		if (rnd() & 1 || at + len > *n) {
			insert(b, n, at, o->p + k, len);
		} else {
			memcpy(b + at, o->p + k, len);
		}
		break;
	case 3: /* flip a bit */
		b[below(*n)] ^= 1 << below(8);
		break;
	case 4: /* a random byte */
		b[below(*n)] = rnd();
		break;
	case 5: /* a special byte */
		b[below(*n)] = special[below(sizeof(special))];
		break;
	case 6: /* a small step up or down, for digits and lengths */
		b[below(*n)] += (int)below(17) - 8;
		break;
	case 7: /* delete a range */
		at = below(*n);
		len = 1 + below(*n - at < 16 ? *n - at : 16);
		memmove(b + at, b + at + len, *n - at - len);
		*n -= len;
		break;
	case 8: /* duplicate a range elsewhere */
		at = below(*n);
		len = 1 + below(*n - at < sizeof(tmp) ? *n - at : sizeof(tmp));
		memcpy(tmp, b + at, len);
		insert(b, n, below(*n + 1), tmp, len);
		break;
	case 9: /* cut the tail */
		*n = below(*n);
		break;
	}
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: %s [-n RUNS] [-t SECONDS] [-s SEED] [-d SEEDDIR]... [-c DIR|-] [FILE]...\n"
		"       %s -w DIR\n",
		prog, prog);
	exit(2);
}

static void write_seeds(const char *dir)
{
	char path[4096];
	FILE *f;
	int i;

	for (i = 0; i < nseeds; i++) {
		snprintf(path, sizeof(path), "%s/builtin-%02d", dir, i);
		f = fopen(path, "wb");
		if (!f || fwrite(seeds[i].p, 1, seeds[i].n, f) != seeds[i].n ||
		    fclose(f)) {
			fprintf(stderr, "%s: cannot write %s\n", prog, path);
			exit(1);
		}
	}
	printf("%s: %d seeds written to %s\n", prog, nseeds, dir);
}

/* The corpus directory: where, and what is in it */
static struct {
	char path[4096];
	bool on; /* one to read and write */
	int files; /* read at the start, then written */
	int kept; /* written by this run */
	int found; /* mutants that took new edges */
} corpus;

/* The target's name: the program's without "fuzz_" */
static const char *target(void)
{
	return strncmp(prog, "fuzz_", 5) ? prog : prog + 5;
}

static void open_corpus(const char *dir)
{
	int n;

	corpus.on = corpus_dir(dir, target(), corpus.path, sizeof(corpus.path));
	if (!corpus.on)
		return;
	n = load_dir(corpus.path);
	corpus.files = n < 0 ? 0 : n;
}

/* A mutant that took new edges: mutated further, kept for the next runs */
static void keep(const uint8_t *buf, size_t n)
{
	corpus.found++;
	add_seed(buf, n);
	if (!corpus.on || corpus.files >= CORPUS_MAX ||
	    corpus.kept >= CORPUS_RUN_MAX)
		return;
	if (corpus_keep(corpus.path, buf, n)) {
		printf("%s: cannot write the corpus %s (%s): kept in memory only\n",
		       prog, corpus.path, strerror(errno));
		corpus.on = false;
		return;
	}
	corpus.files++;
	corpus.kept++;
}

/* A seed of its own for each run, unless one is given (-s) */
static uint64_t fresh_seed(void)
{
	uint64_t s;

	if (getrandom(&s, sizeof(s), GRND_NONBLOCK) != sizeof(s))
		s = (uint64_t)time(NULL) << 20 ^ getpid();
	return s ? s : 1;
}

struct opts {
	unsigned long runs;
	double secs;
	uint64_t seed; /* 0: a fresh one */
	const char *out, *corpus;
};

static void parse_opts(int argc, char **argv, struct opts *o)
{
	int c;

	while ((c = getopt(argc, argv, "n:t:s:d:c:w:")) != -1) {
		switch (c) {
		case 'n':
			o->runs = strtoul(optarg, NULL, 0);
			break;
		case 't':
			o->secs = strtod(optarg, NULL);
			break;
		case 's':
			o->seed = strtoull(optarg, NULL, 0);
			break;
		case 'd':
			if (load_dir(optarg) < 0)
				fprintf(stderr, "%s: no seed directory %s\n",
					prog, optarg);
			break;
		case 'c':
			o->corpus = optarg;
			break;
		case 'w':
			o->out = optarg;
			break;
		default:
			usage();
		}
	}
}

/* RUNS mutants, or as many as SECONDS from t0 allow: how many ran */
static unsigned long fuzz(const struct opts *o, double t0)
{
	static uint8_t buf[INPUT_MAX];
	const struct input *base;
	struct input *slot;
	unsigned long i;
	size_t n;
	int k;

	for (i = 0; i < o->runs; i++) {
		if (!(i & 255) && now() - t0 >= o->secs)
			break;
		/* half from the seeds, half from recent mutants */
		base = nring && rnd() & 1 ? &ring[below(nring)] :
					    &seeds[below(nseeds)];
		n = base->n;
		memcpy(buf, base->p, n);
		for (k = 1 + below(4); k; k--)
			mutate_once(buf, &n);
		if (run(buf, n))
			keep(buf, n);

		slot = &ring[nring < RING ? nring++ : below(RING)];
		free(slot->p);
		slot->p = malloc(n + 1);
		if (!slot->p)
			abort();
		memcpy(slot->p, buf, n);
		slot->n = n;
	}
	return i;
}

int main(int argc, char **argv)
{
	struct opts o = { .runs = 200000, .secs = 10 };
	unsigned long runs;
	double t0, dt;
	int k;

	prog = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	snprintf(crash_path, sizeof(crash_path), "crash-%s", prog);
	parse_opts(argc, argv, &o);
	if (__sanitizer_set_death_callback)
		__sanitizer_set_death_callback(dump_input);
	signal(SIGABRT, on_signal);
	signal(SIGSEGV, on_signal);
	signal(SIGBUS, on_signal);
	signal(SIGFPE, on_signal);

	if (optind < argc) {
		for (k = optind; k < argc; k++)
			if (read_file(argv[k], run_file))
				return 1;
		printf("%s: %d inputs, no finding\n", prog, argc - optind);
		return 0;
	}
	fuzz_seeds(add_seed);
	if (o.out) {
		write_seeds(o.out);
		return 0;
	}
	add_seed("", 0);
	k = nseeds;
	open_corpus(o.corpus);
	if (!o.seed)
		o.seed = fresh_seed();
	rng = o.seed;
	printf("%s: seed %" PRIu64 ", at most %lu runs or %g s, %d seeds, "
	       "corpus %s (%d inputs)\n",
	       prog, o.seed, o.runs, o.secs, k,
	       corpus.on ? corpus.path : "none", nseeds - k);
	fflush(stdout);

	t0 = now();
	for (k = 0; k < nseeds; k++)
		run(seeds[k].p, seeds[k].n);
	runs = fuzz(&o, t0);
	dt = now() - t0;
	printf("%s: %lu runs in %.1f s (%.0f/s), %u edges, %d new inputs "
	       "(%d in the corpus), no finding (seed %" PRIu64 ")\n",
	       prog, runs, dt, dt > 0 ? runs / dt : 0.0, cov_edges(),
	       corpus.found, corpus.kept, o.seed);
	return 0;
}
