// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * migrctl's tables (show.c) print what migr processes wrote: their comm,
 * errors and device names must not reach the terminal as escape sequences.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "migrctl.h"
#include "unit.h"

static char out[65536];
static size_t out_len;

/* Run fn on reply s with stdout captured into out */
static void capture(const char *s, void (*fn)(const json_t *j))
{
	json_t *j = migr_json_parse(s, strlen(s));
	FILE *tmp = tmpfile();
	int saved;

	out_len = 0;
	out[0] = 0;
	CHECK(tmp != NULL);
	if (!tmp)
		return;
	if (!j) {
		CHECK(!"test reply is JSON");
		fclose(tmp);
		return;
	}
	fflush(stdout);
	saved = dup(1);
	dup2(fileno(tmp), 1);
	fn(j);
	json_decref(j);
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	rewind(tmp);
	out_len = fread(out, 1, sizeof(out) - 1, tmp);
	out[out_len] = 0;
	fclose(tmp);
}

/* Only printable ASCII and newlines, and something was printed */
static int printable(void)
{
	size_t i;

	for (i = 0; i < out_len; i++)
		if ((out[i] < 0x20 || out[i] > 0x7e) && out[i] != '\n') {
			fprintf(stderr, "byte 0x%02x at %zu of: %s\n",
				(unsigned char)out[i], i, out);
			return 0;
		}
	return out_len > 0;
}

/* \u001b (ESC) sequences, DEL and a C1 control in UTF-8 (U+009B is CSI
 * to an 8-bit terminal); malformed UTF-8 is no JSON (test_malformed) */
#define EVIL                                                                   \
	"\\u001b[2J\\u001b]0;owned\\u0007\x7f"                                 \
	"31m\xc2\x9b"                                                          \
	"1m"

static const char status_reply[] =
	"{\"v\":1,\"ok\":true,\"processes\":["
	"{\"pid\":41,\"uid\":1000,\"comm\":\"c" EVIL "\",\"status\":null,"
	"\"error\":\"e" EVIL "\"},"
	"{\"pid\":42,\"uid\":1000,\"comm\":\"c" EVIL "\",\"status\":"
	"{\"contexts\":[{\"device\":\"d" EVIL "\",\"lower\":\"l" EVIL "\","
	"\"blocker\":\"b" EVIL "\",\"switches\":3,\"qps\":["
	"{\"qpn\":17,\"phys\":18,\"state\":3,\"dest_qpn\":19,\"self\":true}"
	"]}]}}]}";

static const char switch_reply[] =
	"{\"v\":1,\"ok\":true,\"pid\":42,\"reply\":{\"ok\":false,\"switch\":["
	"{\"device\":\"d" EVIL "\",\"from\":\"f" EVIL "\",\"to\":\"t" EVIL "\","
	"\"ok\":false,\"error\":\"e" EVIL "\",\"rolled_back\":true,"
	"\"phases_ms\":{\"drain\":1.5,\"k" EVIL "\":2},\"total_ms\":3.5,"
	"\"objects\":{\"pds\":1,\"qps\":2}}]}}";

static const char owner_reply[] =
	"{\"v\":1,\"ok\":true,\"ibdev\":\"i" EVIL "\",\"qpn\":17,\"pid\":42,"
	"\"migr\":true,\"comm\":\"c" EVIL "\"}";

static const char kernel_reply[] =
	"{\"v\":1,\"ok\":true,\"ibdev\":\"i\",\"qpn\":1,\"pid\":0,"
	"\"kernel\":\"k" EVIL "\"}";

static const char ping_reply[] =
	"{\"v\":1,\"ok\":true,\"host\":\"h" EVIL "\",\"rtt_ms\":0.25,"
	"\"peer\":{\"v\":1,\"ok\":true,\"version\":1,\"host\":\"p" EVIL "\"}}";

static void status_table(const json_t *j)
{
	show_status(j, 1);
}

static void owner_line(const json_t *j)
{
	show_qpn_owner(j, "host-b");
}

static void test_tables(void)
{
	capture(status_reply, status_table);
	CHECK(printable());
	CHECK(strstr(out, "c?[2J?]0;owned??31m?1m") != NULL);
	CHECK(strstr(out, "e?[2J") && strstr(out, "cannot switch: b?[2J"));
	CHECK(strstr(out, "qp 17 (device qp 18) RTS -> 19"));

	capture(switch_reply, show_switch);
	CHECK(printable());
	CHECK(strstr(out, "d?[2J") && strstr(out, "FAILED (e?[2J"));
	CHECK(strstr(out, "k?[2J") && strstr(out, "quiesce/drain"));

	capture(owner_reply, owner_line);
	CHECK(printable() && strstr(out, "(migr, c?[2J"));
	capture(kernel_reply, owner_line);
	CHECK(printable() && strstr(out, "kernel (k?[2J"));
	capture(ping_reply, show_peer_ping);
	CHECK(printable() && strstr(out, "h?[2J") && strstr(out, "on p?[2J"));
}

/* Numbers out of range print as the default, never as a wrapped cast */
static void test_numbers(void)
{
	capture("{\"v\":1,\"ok\":true,\"processes\":[{\"pid\":1e300,"
		"\"uid\":-1,\"comm\":\"x\",\"status\":{\"contexts\":["
		"{\"device\":\"d\",\"lower\":\"l\",\"switches\":4294967296,"
		"\"qps\":[{\"qpn\":16777216,\"phys\":2.5,\"state\":1e30,"
		"\"dest_qpn\":-5}]}]}}]}",
		status_table);
	CHECK(printable());
	CHECK(strstr(out, "0        0      x ") != NULL);
	CHECK(strstr(out, "qp 0 (device qp 0) ? -> 0") != NULL);
}

static const char migrate_reply[] =
	"{\"v\":1,\"ok\":true,\"pid\":42,\"to\":\"10.9.0.2\",\"device\":\"rxe0\","
	"\"from\":\"rxe1\",\"phases_ms\":{\"park\":2.5},\"blackout_ms\":9,"
	"\"partner_blackout_ms\":7.5,\"total_ms\":20,\"partners\":";

/* migrate's table with "partners" as n, the rest of the reply as above */
static void migrate_table(const char *n)
{
	char reply[sizeof(migrate_reply) + 32];

	snprintf(reply, sizeof(reply), "%s%s}", migrate_reply, n);
	capture(reply, show_migrate);
}

/*
 * A count of partners out of int's range, or no integer, is none: it was
 * cast from a double as it came, undefined past int's range (UBSan's
 * float-cast-overflow, which this test is built with; x86 printed
 * -2147483648)
 */
static void test_migrate_counts(void)
{
	static const char *const none[] = { "1e300", "-1e300", "2147483648",
					    "1e10",  "-3",     "2.5",
					    "\"3\"", "0" };
	unsigned int i;

	migrate_table("3");
	CHECK(printable() && strstr(out, "7.5 ms (3 QPs)"));
	migrate_table("3.0");
	CHECK(strstr(out, "(3 QPs)"));
	migrate_table("2147483647");
	CHECK(strstr(out, "(2147483647 QPs)"));
	for (i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
		migrate_table(none[i]);
		if (!printable() || strstr(out, "seen from the partners") ||
		    !strstr(out, "pid 42 moved")) {
			fprintf(stderr, "partners %s: %s\n", none[i], out);
			CHECK(!"an impossible count of partners shows none");
		}
	}
}

/* --json: the reply as received, on one line of printable ASCII */
static void test_json_line(void)
{
	const char *in = "{\"v\":1,\t\"ok\":true,\r\n\"comm\":\"a\x7f"
			 "b\xc2\x9b"
			 "c\xc3\xa9"
			 "d\xf0\x9f\x98\x80"
			 "e\\u001b[2J\\\"q\"}\r";
	const char *want = "{\"v\":1,\"ok\":true,\"comm\":\"a\\u007fb\\u009bc"
			   "\\u00e9d\\ud83d\\ude00e\\u001b[2J\\\"q\"}\n";
	json_t *j = migr_json_parse(in, strlen(in)), *j2;
	char buf[128];
	FILE *f = tmpfile();
	size_t n;

	CHECK(j != NULL);
	show_json_line(f, in);
	rewind(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	CHECK(!strcmp(buf, want));
	/* the same text to a JSON reader */
	j2 = migr_json_parse(buf, n);
	CHECK(j2 && json_equal(j, j2));
	json_decref(j2);
	json_decref(j);
}

/* Malformed UTF-8 (a lone 0x9b, CSI) is not JSON: nothing of it is shown */
static void test_malformed(void)
{
	const char *s = "{\"v\":1,\"ok\":true,\"comm\":\"c\x9b"
			"31m\",\"pid\":1}";

	CHECK(!migr_json_parse(s, strlen(s)));
}

static bool moved(const char *s, char *err, size_t len)
{
	json_t *j = migr_json_parse(s, strlen(s));
	bool ret;

	err[0] = 0;
	if (!j)
		return false;
	ret = show_switch_moved(j, err, len);
	json_decref(j);
	return ret;
}

/* drain counts a process as moved on migrd's "ok" and every device's */
static void test_moved(void)
{
	char err[256];

	CHECK(moved("{\"v\":1,\"ok\":true,\"reply\":{\"ok\":true,\"switch\":"
		    "[{\"device\":\"a\",\"ok\":true},{\"ok\":true}]}}",
		    err, sizeof(err)));
	CHECK(!moved("{\"v\":1,\"ok\":true,\"reply\":{\"ok\":true,\"switch\":"
		     "[{\"device\":\"a\",\"ok\":true},{\"device\":\"b\x7f\","
		     "\"ok\":false,\"error\":\"no \\u001b\"}]}}",
		     err, sizeof(err)));
	CHECK(!strcmp(err, "b? did not switch: no ?"));
	CHECK(!moved("{\"v\":1,\"ok\":false,\"error\":\"x\\u009b\","
		     "\"reply\":{\"switch\":[{\"ok\":true}]}}",
		     err, sizeof(err)));
	CHECK(!strcmp(err, "x?"));
	/* no device, or an "ok" that is not true */
	CHECK(!moved("{\"v\":1,\"ok\":true,\"reply\":{\"ok\":true}}", err,
		     sizeof(err)));
	CHECK(!moved("{\"v\":1,\"ok\":true,\"reply\":{\"switch\":[]}}", err,
		     sizeof(err)));
	CHECK(!moved("{\"v\":1,\"ok\":true,\"reply\":{\"switch\":"
		     "[{\"ok\":\"true\"}]}}",
		     err, sizeof(err)));
	CHECK(!moved("{\"v\":1,\"ok\":true,\"reply\":{\"switch\":"
		     "[{\"ok\":1}]}}",
		     err, sizeof(err)));
	CHECK(!moved("{\"v\":1,\"ok\":true,\"reply\":{\"switch\":"
		     "[{\"device\":\"a\"}]}}",
		     err, sizeof(err)));
	/* an unescaped error turned into a second "ok": not JSON at all */
	CHECK(!moved("{\"v\":1,\"ok\":true,\"reply\":{\"switch\":[{\"ok\":"
		     "false,\"error\":\"x\",\"ok\":true}]}}",
		     err, sizeof(err)));
}

int main(void)
{
	test_tables();
	test_numbers();
	test_migrate_counts();
	test_json_line();
	test_malformed();
	test_moved();
	return unit_done("show");
}
