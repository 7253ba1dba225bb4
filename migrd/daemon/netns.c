// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* See netns.h */
#define _GNU_SOURCE /* setns() */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "criu_run.h"
#include "log.h"
#include "migr_json.h"
#include "netns.h"
#include "proc_ns.h"
#include "sockio.h"

#define IP_MS 10000 /* one "ip" command */
#define IP_OUT_MAX 8192

/* NSpid's fields: how many (the depth) and the last (proc_ns.h) */
static int nspid(int pid, int *depth)
{
	return migr_nspid(pid, depth);
}

/* Depth of migrd's own pid namespace (1 on a host, more in a container) */
static int own_depth(void)
{
	static int depth;
	int d;

	if (!__atomic_load_n(&depth, __ATOMIC_RELAXED) &&
	    nspid(getpid(), &d) > 0)
		__atomic_store_n(&depth, d, __ATOMIC_RELAXED);
	return __atomic_load_n(&depth, __ATOMIC_RELAXED);
}

int ns_pid(int pid)
{
	int depth;

	return nspid(pid, &depth);
}

int ns_pidns_own(int pid)
{
	int depth, mine = own_depth();

	if (nspid(pid, &depth) <= 0 || !mine)
		return -1;
	return depth > mine;
}

int ns_pidns_init(int pid)
{
	int depth, mine = own_depth(), last = nspid(pid, &depth);

	if (last <= 0 || !mine)
		return -1;
	return depth > mine && last == 1;
}

/*
 * fn(arg) on a thread of its own in the network namespace nsfd: only that
 * thread enters it (setns affects the caller alone) and it ends there, so
 * no thread of migrd is ever left in another namespace
 */
struct in_ns {
	int nsfd;
	int (*fn)(void *arg);
	void *arg;
	int ret, err;
};

static void *in_ns_thread(void *p)
{
	struct in_ns *a = p;

	if (setns(a->nsfd, CLONE_NEWNET)) {
		a->ret = -1;
		a->err = errno;
		return NULL;
	}
	a->ret = a->fn(a->arg);
	a->err = errno;
	return NULL;
}

static int in_netns(int nsfd, int (*fn)(void *arg), void *arg)
{
	struct in_ns a = { .nsfd = nsfd, .fn = fn, .arg = arg };
	pthread_t th;
	int ret;

	ret = pthread_create(&th, NULL, in_ns_thread, &a);
	if (ret) {
		errno = ret;
		return -1;
	}
	pthread_join(th, NULL);
	errno = a.err;
	return a.ret;
}

struct sock_args {
	int domain, type;
};

static int make_socket(void *p)
{
	struct sock_args *s = p;

	return socket(s->domain, s->type, 0);
}

int ns_socket(int pid, int domain, int type)
{
	struct sock_args s = { domain, type };
	char path[64];
	int nsfd, fd, err;

	snprintf(path, sizeof(path), "/proc/%d/ns/net", pid);
	nsfd = open(path, O_RDONLY | O_CLOEXEC);
	if (nsfd < 0)
		return -1;
	fd = in_netns(nsfd, make_socket, &s);
	err = errno;
	close(nsfd);
	errno = err;
	return fd;
}

int netns_open_other(int pid, int *fd, unsigned long *ino)
{
	struct stat mine, its;
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/ns/net", pid);
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return -1;
	if (fstat(*fd, &its) || stat("/proc/self/ns/net", &mine)) {
		close(*fd);
		return -1;
	}
	if (its.st_ino == mine.st_ino && its.st_dev == mine.st_dev) {
		close(*fd);
		*fd = -1;
		return 0;
	}
	*ino = its.st_ino;
	return 1;
}

struct read_args {
	struct req_ns *ns;
	char *err;
	size_t errlen;
};

/* One address of its interface into a->ns; 0, or -1 with a->err */
static int read_addr(struct read_args *a, const struct ifaddrs *i, int *n4)
{
	struct req_ns *ns = a->ns;

	if (ns->ifname[0] && strcmp(ns->ifname, i->ifa_name)) {
		snprintf(
			a->err, a->errlen,
			"it has interfaces %s and %s: only one (besides lo) can move",
			ns->ifname, i->ifa_name);
		return -1;
	}
	snprintf(ns->ifname, sizeof(ns->ifname), "%s", i->ifa_name);
	if (i->ifa_addr->sa_family == AF_PACKET) {
		const struct sockaddr_ll *ll = (void *)i->ifa_addr;
		const unsigned char *m = ll->sll_addr;

		if (ll->sll_halen != 6) {
			snprintf(a->err, a->errlen,
				 "%s is not an Ethernet interface",
				 i->ifa_name);
			return -1;
		}
		snprintf(ns->mac, sizeof(ns->mac),
			 "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2],
			 m[3], m[4], m[5]);
	} else if (i->ifa_addr->sa_family == AF_INET) {
		const struct sockaddr_in *ad = (void *)i->ifa_addr;
		const struct sockaddr_in *mask = (void *)i->ifa_netmask;

		if ((*n4)++) {
			snprintf(
				a->err, a->errlen,
				"%s has more than one IPv4 address: one can move",
				i->ifa_name);
			return -1;
		}
		inet_ntop(AF_INET, &ad->sin_addr, ns->addr, sizeof(ns->addr));
		ns->prefix =
			mask ? __builtin_popcount(mask->sin_addr.s_addr) : 32;
	}
	return 0;
}

static int read_addrs(void *p)
{
	struct read_args *a = p;
	struct req_ns *ns = a->ns;
	struct ifaddrs *ifs, *i;
	int n4 = 0;

	if (getifaddrs(&ifs)) {
		snprintf(a->err, a->errlen, "cannot list its addresses: %s",
			 strerror(errno));
		return -1;
	}
	for (i = ifs; i; i = i->ifa_next) {
		if (!i->ifa_addr || (i->ifa_flags & IFF_LOOPBACK))
			continue;
		if (read_addr(a, i, &n4)) {
			freeifaddrs(ifs);
			return -1;
		}
	}
	freeifaddrs(ifs);
	if (!n4 || !ns->mac[0]) {
		snprintf(a->err, a->errlen,
			 "it has no Ethernet interface with an IPv4 address");
		return -1;
	}
	return 0;
}

int netns_read(int nsfd, struct req_ns *ns, char *err, size_t errlen)
{
	struct read_args a = { ns, err, errlen };

	memset(ns, 0, sizeof(*ns));
	err[0] = 0;
	if (in_netns(nsfd, read_addrs, &a)) {
		if (!err[0])
			snprintf(err, errlen, "cannot enter it: %s",
				 strerror(errno));
		return -1;
	}
	ns->own_netns = true;
	return 0;
}

/*
 * ip with argv, in nsfd's network namespace unless -1, its output and
 * errors into pipe p: its pid, or -1 (fork()'s)
 */
static pid_t ip_spawn(int nsfd, char *const argv[], const int p[2])
{
	static const char *const paths[] = { "/usr/sbin/ip", "/sbin/ip",
					     "/usr/bin/ip", "/bin/ip" };
	static char env_path[] = "PATH=/usr/sbin:/usr/bin:/sbin:/bin";
	char *envp[] = { env_path, NULL };
	pid_t pid = fork();
	int i;

	if (pid == 0) {
		int in = open("/dev/null", O_RDONLY);

		if (in < 0 || dup2(in, 0) < 0 || dup2(p[1], 1) < 0 ||
		    dup2(p[1], 2) < 0 ||
		    (nsfd >= 0 && setns(nsfd, CLONE_NEWNET)))
			_exit(126);
		for (i = 0; i < 4; i++)
			execve(paths[i], argv, envp);
		_exit(127);
	}
	return pid;
}

/* What fd gives until its end, a full buf or deadline; its length */
static size_t read_until(int fd, char *buf, size_t size, long long deadline)
{
	size_t got = 0;

	for (;;) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		int left = io_left_ms(deadline);
		ssize_t r;

		if (!left || poll(&pf, 1, left) <= 0)
			break;
		r = read(fd, buf + got, size - 1 - got);
		if (r <= 0)
			break;
		got += r;
		if (got == size - 1)
			break;
	}
	buf[got] = 0;
	return got;
}

/*
 * "ip ARGS" (in nsfd's network namespace unless -1), bounded; its
 * output into out (may be NULL). 0, or -1 with err naming the command.
 */
static int ip(int nsfd, const char *const args[], char *out, size_t outlen,
	      char *err, size_t errlen)
{
	char *argv[24], buf[IP_OUT_MAX], cmd[256];
	long long deadline = io_now_ms() + IP_MS;
	size_t got, off = 0;
	int p[2], n, i, status;
	pid_t pid;

	argv[0] = (char *)"ip";
	for (n = 1; args[n - 1] && n < 23; n++)
		argv[n] = (char *)args[n - 1];
	argv[n] = NULL;
	for (i = 0; argv[i] && off < sizeof(cmd); i++)
		off += snprintf(cmd + off, sizeof(cmd) - off, "%s%s",
				i ? " " : "", argv[i]);
	if (pipe2(p, O_CLOEXEC)) {
		snprintf(err, errlen, "%s: %s", cmd, strerror(errno));
		return -1;
	}
	pid = ip_spawn(nsfd, argv, p);
	close(p[1]);
	if (pid < 0) {
		close(p[0]);
		snprintf(err, errlen, "%s: %s", cmd, strerror(errno));
		return -1;
	}
	got = read_until(p[0], buf, sizeof(buf), deadline);
	close(p[0]);
	status = criu_wait_bounded(pid, io_left_ms(deadline));
	if (out)
		snprintf(out, outlen, "%s", buf);
	if (status == 0)
		return 0;
	while (got && buf[got - 1] == '\n')
		buf[--got] = 0;
	if (status < 0)
		snprintf(err, errlen, "%s: no answer within %d s", cmd,
			 IP_MS / 1000);
	else if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
		snprintf(err, errlen, "%s: no ip command (install iproute2)",
			 cmd);
	else
		snprintf(err, errlen, "%s failed: %s", cmd,
			 got ? buf : "no message");
	return -1;
}

int netns_link(int nsfd, const struct req_ns *ns, bool up, bool addr_del,
	       char *err, size_t errlen)
{
	char addr[32];
	const char *link[] = { "link", "set", ns->ifname, up ? "up" : "down",
			       NULL };
	const char *del[] = { "addr", "del", addr, "dev", ns->ifname, NULL };

	snprintf(addr, sizeof(addr), "%s/%u", ns->addr, ns->prefix);
	if (ip(nsfd, link, NULL, 0, err, errlen))
		return -1;
	return addr_del ? ip(nsfd, del, NULL, 0, err, errlen) : 0;
}

/* The host's interface towards addr ("ip route get"): 0, or -1 */
static int route_dev(const char *addr, char *dev, size_t len, bool *local,
		     char *err, size_t errlen)
{
	const char *args[] = { "-j", "route", "get", addr, NULL };
	char out[IP_OUT_MAX], type[32] = "";
	json_t *j, *r;

	if (ip(-1, args, out, sizeof(out), err, errlen))
		return -1;
	/* an array, which migr_json_parse() (objects only) does not take */
	j = json_loads(out, JSON_REJECT_DUPLICATES, NULL);
	r = json_array_get(j, 0);
	if (!r || !migr_json_text(r, "dev", dev, len)) {
		json_decref(j);
		snprintf(err, errlen, "ip route get %s: no interface named",
			 addr);
		return -1;
	}
	migr_json_text(r, "type", type, sizeof(type));
	*local = !strcmp(type, "local") || !strcmp(dev, "lo");
	json_decref(j);
	return 0;
}

int netns_check(const struct req_ns *ns, char *err, size_t errlen)
{
	char dev[IF_NAMESIZE], why[256];
	bool local;

	if (route_dev(ns->addr, dev, sizeof(dev), &local, why, sizeof(why))) {
		snprintf(err, errlen, "no interface here reaches %s (%s)",
			 ns->addr, why);
		return -1;
	}
	if (local) {
		snprintf(err, errlen, "address %s is this host's own",
			 ns->addr);
		return -1;
	}
	return 0;
}

int netns_create(const char *name, const struct req_ns *ns, int *fd, char *err,
		 size_t errlen)
{
	char dev[IF_NAMESIZE], tmp[IF_NAMESIZE], addr[32], path[128];
	bool local;
	const char *add_ns[] = { "netns", "add", name, NULL };
	/* the kernel's random MAC until the restore is done */
	const char *add_link[] = { "link", "add",     tmp,    "link",	dev,
				   "type", "macvlan", "mode", "bridge", NULL };
	const char *move[] = { "link", "set", tmp, "netns", name, NULL };
	const char *rename[] = { "-n", name,   "link",	   "set",
				 tmp,  "name", ns->ifname, NULL };
	const char *add_addr[] = { "-n", name,	"addr",	    "add",
				   addr, "dev", ns->ifname, NULL };
	const char *lo[] = { "-n", name, "link", "set", "lo", "up", NULL };
	const char *up[] = { "-n",  name,  "link", "set", ns->ifname,
			     "arp", "off", "up",   NULL };
	const char *del_link[] = { "link", "del", tmp, NULL };
	char ignore[128];

	*fd = -1;
	/* A host-side name of at most 15 characters until it moves */
	snprintf(tmp, sizeof(tmp), "mg%.13s", name + strlen(NETNS_PREFIX));
	snprintf(addr, sizeof(addr), "%s/%u", ns->addr, ns->prefix);
	if (route_dev(ns->addr, dev, sizeof(dev), &local, err, errlen))
		return -1;
	if (ip(-1, add_ns, NULL, 0, err, errlen))
		return -1;
	if (ip(-1, add_link, NULL, 0, err, errlen))
		goto del_ns;
	if (ip(-1, move, NULL, 0, err, errlen)) {
		ip(-1, del_link, NULL, 0, ignore, sizeof(ignore));
		goto del_ns;
	}
	if (ip(-1, rename, NULL, 0, err, errlen) ||
	    ip(-1, add_addr, NULL, 0, err, errlen) ||
	    ip(-1, lo, NULL, 0, err, errlen) ||
	    ip(-1, up, NULL, 0, err, errlen))
		goto del_ns;
	snprintf(path, sizeof(path), "/run/netns/%s", name);
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0) {
		snprintf(err, errlen, "cannot open %s: %s", path,
			 strerror(errno));
		goto del_ns;
	}
	log_info("network namespace %s: %s %s %s on %s (macvlan)", name,
		 ns->ifname, ns->mac, addr, dev);
	return 0;
del_ns:
	/* its interfaces go with it */
	netns_delete(name);
	return -1;
}

void netns_delete(const char *name)
{
	const char *del[] = { "netns", "del", name, NULL };
	char err[256];

	if (ip(-1, del, NULL, 0, err, sizeof(err)))
		log_warn("network namespace %s stays: %s", name, err);
}

int netns_sweep(const char *name)
{
	struct stat ns, st;
	struct dirent *d;
	char path[300];
	int n = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/run/netns/%s", name);
	if (stat(path, &ns))
		return -1; /* gone already: a sweep may run twice */
	/*
	 * Its processes keep the namespace (and its address) alive once its
	 * name is gone: none of them may stay
	 */
	dir = opendir("/proc");
	while (dir && (d = readdir(dir))) {
		if (d->d_name[0] < '1' || d->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/ns/net", d->d_name);
		if (!stat(path, &st) && st.st_ino == ns.st_ino &&
		    st.st_dev == ns.st_dev && !kill(atoi(d->d_name), SIGKILL))
			n++;
	}
	if (dir)
		closedir(dir);
	netns_delete(name);
	return n;
}

bool netns_ours(int nsfd, char *name, size_t len)
{
	struct stat its, st;
	struct dirent *d;
	char path[300];
	bool found = false;
	DIR *dir;

	if (fstat(nsfd, &its))
		return false;
	dir = opendir("/run/netns");
	while (dir && !found && (d = readdir(dir))) {
		if (strncmp(d->d_name, NETNS_PREFIX, strlen(NETNS_PREFIX)))
			continue;
		snprintf(path, sizeof(path), "/run/netns/%s", d->d_name);
		if (!stat(path, &st) && st.st_ino == its.st_ino &&
		    st.st_dev == its.st_dev) {
			snprintf(name, len, "%s", d->d_name);
			found = true;
		}
	}
	if (dir)
		closedir(dir);
	return found;
}

/* An ARP request for its own address: whoever hears it updates its cache */
static int garp(void *p)
{
	const struct req_ns *ns = p;
	struct sockaddr_ll to = { .sll_family = AF_PACKET,
				  .sll_protocol = htons(ETH_P_ARP),
				  .sll_halen = 6 };
	unsigned char pkt[28], mac[6];
	struct arphdr *h = (void *)pkt;
	struct in_addr a;
	int fd, i, ret = 0;

	if (sscanf(ns->mac, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &mac[0], &mac[1],
		   &mac[2], &mac[3], &mac[4], &mac[5]) != 6 ||
	    inet_pton(AF_INET, ns->addr, &a) != 1) {
		errno = EINVAL;
		return -1;
	}
	to.sll_ifindex = if_nametoindex(ns->ifname);
	if (!to.sll_ifindex)
		return -1;
	memset(to.sll_addr, 0xff, 6);
	h->ar_hrd = htons(ARPHRD_ETHER);
	h->ar_pro = htons(ETH_P_IP);
	h->ar_hln = 6;
	h->ar_pln = 4;
	h->ar_op = htons(ARPOP_REQUEST);
	memcpy(pkt + 8, mac, 6);
	memcpy(pkt + 14, &a, 4);
	memset(pkt + 18, 0, 6);
	memcpy(pkt + 24, &a, 4);
	fd = socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC, htons(ETH_P_ARP));
	if (fd < 0)
		return -1;
	/* Two, as arping -U does by default; a lost one is not fatal */
	for (i = 0; i < 2; i++) {
		if (sendto(fd, pkt, sizeof(pkt), 0, (struct sockaddr *)&to,
			   sizeof(to)) != sizeof(pkt))
			ret = -1;
		if (!i)
			usleep(50000);
	}
	close(fd);
	return ret;
}

int netns_announce(int nsfd, const struct req_ns *ns, char *err, size_t errlen)
{
	const char *args[] = { "link",	"set", ns->ifname, "address",
			       ns->mac, "arp", "on",	   NULL };

	if (ip(nsfd, args, NULL, 0, err, errlen))
		return -1;
	if (in_netns(nsfd, garp, (void *)ns))
		/* the peers learn it from its next packet anyway */
		log_warn("gratuitous ARP for %s on %s: %s", ns->addr,
			 ns->ifname, strerror(errno));
	return 0;
}
