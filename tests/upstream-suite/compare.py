#!/usr/bin/env python3
"""Compare upstream rdma-core's test suite on a device and on its migr twin.

Reads (or runs, with --run) two verbose unittest logs of rdma-core's
tests/run_tests.py, one on the real device (the "raw" column, rxe0 by
default) and one on its twin (migr_rxe0), extracts every test's outcome and
reports both columns side by side, then every test whose outcome differs.

usage:
  compare.py [OPTIONS] RAW_LOG MIGR_LOG
  compare.py [OPTIONS] --run TESTS_DIR [--log-dir DIR] [--timeout S]

Outcomes: ok, skipped (with its reason), FAIL, ERROR, expected failure,
unexpected success; "absent" for a test that only one log has. A test with
subtests takes the worst of its subtests' and its own results. Two outcomes
differ when their kinds differ, or when skip reasons differ once each run's
device name is replaced by <dev>. One pseudo test, log.exception_ignored,
is ERROR in a log that shows "Exception ignored in: ..." (an error Python
could only print, e.g. a destroy failing in a __dealloc__) and ok otherwise.

Exit status:
  0  both runs complete and sane, no difference outside the allow-list
  1  a difference not in the allow-list (tracebacks are printed)
  2  a run crashed, timed out or is not a sane run (or its log could not be
     parsed consistently): fails loudly with the last lines of its log
The last line printed is "N passed, N failed, N skipped" for the migr
column (failed counts FAIL, ERROR and unexpected success; passed counts ok
and expected failure).

The allow-list format is described at the top of allowlist.txt.
Python 3 standard library only.
"""

import argparse
import ast
import fnmatch
import os
import re
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# Outcome kinds (as unittest prints them).
ERROR, FAIL, XPASS, SKIP, XFAIL, OK, ABSENT = (
    'ERROR', 'FAIL', 'unexpected success', 'skipped', 'expected failure',
    'ok', 'absent')
FAILED_KINDS = (ERROR, FAIL, XPASS)
PASSED_KINDS = (OK, XFAIL)

# "test_x (tests.mod.Class.test_x)" (Python >= 3.11) or "test_x
# (tests.mod.Class)"; class- and module-level fixtures print
# "setUpClass (tests.mod.Class)". Subtests are indented by two spaces and
# followed by "[msg]" and/or "(param=value, ...)".
DESC_RE = re.compile(r'^(?P<sub>  )?(?P<name>[A-Za-z_]\w*) '
                     r'\((?P<where>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)\)'
                     r'(?P<rest>.*)$')
STATUS_RE = re.compile(r'^(?:(?P<kind>ok|FAIL|ERROR|expected failure|'
                       r'unexpected success)|skipped (?P<reason>\'.*\'|".*"))$')
SEP1 = '=' * 70
SEP2 = '-' * 70
RAN_RE = re.compile(r'^Ran (\d+) tests? in ([0-9.]+)s$')
RESULT_RE = re.compile(r'^(OK|FAILED|NO TESTS RAN)(?: \((.*)\))?$')
TRACE_HEAD_RE = re.compile(r'^(ERROR|FAIL|UNEXPECTED SUCCESS): (.*)$')
FIXTURES = ('setUpClass', 'tearDownClass', 'setUpModule', 'tearDownModule')
# A pseudo test: ERROR when the log shows errors Python could only print
# ("Exception ignored in: ...", e.g. a destroy failing in __dealloc__).
IGNORED_ID = 'log.exception_ignored'


def test_id(m):
    """The dotted test id of a DESC_RE match (module.Class.method)."""
    where, name = m.group('where'), m.group('name')
    if where.endswith('.' + name) and name not in FIXTURES:
        return where  # Python >= 3.11 names the method itself
    return where + '.' + name


class Result:
    """All results a log gives for one test id."""

    def __init__(self, tid):
        self.tid = tid
        self.events = []  # (kind, reason or None, subtest description or None)

    def add(self, kind, reason, sub):
        self.events.append((kind, reason, sub))

    @property
    def kind(self):
        if not self.events:
            return ABSENT
        kinds = [k for k, _, _ in self.events]
        for k in (ERROR, FAIL, XPASS):
            if k in kinds:
                return k
        # Otherwise the test's own result (ok even if subtests were skipped).
        own = [k for k, _, s in self.events if s is None]
        for k in (OK, XFAIL, SKIP):
            if k in own:
                return k
        return SKIP  # only skipped subtests

    @property
    def reason(self):
        """The skip reason(s) (own first), else '' ."""
        own = [r for k, r, s in self.events if k == SKIP and s is None]
        subs = ['subtest %s skipped: %s' % (s, r) for k, r, s in self.events
                if k == SKIP and s is not None]
        return '; '.join(own + subs)


class Run:
    """One parsed log."""

    def __init__(self, dev, path, text, rc=None, wall=None):
        self.dev, self.path, self.rc, self.wall = dev, path, rc, wall
        self.lines = text.splitlines()
        self.results = {}  # id -> Result, in log order
        self.tracebacks = {}  # id -> [text, ...]
        self.ran = self.duration = self.verdict = None
        self.verdict_counts = {}
        self.ignored = []  # "Exception ignored" messages: (test, text)
        self.problems = []  # why the run is not usable
        self._parse()

    # -- parsing -----------------------------------------------------------
    def _result(self, tid):
        if tid not in self.results:
            self.results[tid] = Result(tid)
        return self.results[tid]

    def _parse(self):
        lines = self.lines
        pending = None  # [tid, sub, dots_seen]
        last = None  # the test that started last
        i = 0
        summary_at = None
        while i < len(lines):
            line = lines[i].rstrip('\r')
            if 'Exception ignored' in line:
                self._ignored(i, last)
            if line == SEP1 or (line == SEP2 and i + 1 < len(lines) and
                                RAN_RE.match(lines[i + 1].strip())):
                # End of the per-test lines: the error report follows.
                summary_at = i
                break
            m = DESC_RE.match(line)
            if m:
                tid = test_id(m)
                sub = None
                rest = m.group('rest')
                if m.group('sub'):
                    sub = rest.split(' ... ', 1)[0].strip() or '(subtest)'
                pending = [tid, sub, False]
                last = tid
                self._result(tid)
                if ' ... ' in rest:
                    pending[2] = True
                    self._status(pending, rest.split(' ... ', 1)[1])
                i += 1
                continue
            if pending and not pending[2] and ' ... ' in line:
                # The description's second line: the docstring's first line.
                pending[2] = True
                self._status(pending, line.rsplit(' ... ', 1)[1])
            elif pending and pending[2]:
                # Output of the test itself came between "... " and the result.
                self._status(pending, line.strip())
            i += 1
        if summary_at is not None:
            self._parse_summary(summary_at)
        self._check()

    def _ignored(self, i, where):
        """An error Python could not raise (e.g. in __dealloc__): keep it."""
        text = self.lines[max(0, i - 4):i + 1]
        for j, line in enumerate(text):
            if 'Traceback (most recent call last):' in line:
                text = [line[line.index('Traceback'):]] + text[j + 1:]
                break
        self.ignored.append((where or 'the start of the run', '\n'.join(text)))

    def _status(self, pending, text):
        """Record text as pending's result if it is one."""
        m = STATUS_RE.match(text.strip())
        if not m or pending[0] is None:
            return False
        if m.group('kind'):
            kind, reason = m.group('kind'), None
        else:
            kind = SKIP
            try:
                reason = ast.literal_eval(m.group('reason'))
            except (ValueError, SyntaxError):
                reason = m.group('reason')[1:-1]
        self.results[pending[0]].add(kind, reason, pending[1])
        pending[0] = None  # one result per description line
        return True

    def _parse_summary(self, start):
        lines = self.lines
        i = start
        current = None
        while i < len(lines):
            line = lines[i].rstrip('\r')
            if line == SEP1 and i + 1 < len(lines):
                m = TRACE_HEAD_RE.match(lines[i + 1])
                if m:
                    d = DESC_RE.match(m.group(2))
                    tid = test_id(d) if d else m.group(2)
                    current = [m.group(1) + ': ' + m.group(2)]
                    self.tracebacks.setdefault(tid, []).append(current)
                    i += 2
                    continue
            m = RAN_RE.match(line.strip())
            if m and i > 0 and lines[i - 1].rstrip('\r') == SEP2:
                current = None
                self.ran, self.duration = int(m.group(1)), float(m.group(2))
                for rest in lines[i + 1:]:
                    r = RESULT_RE.match(rest.strip())
                    if r:
                        self.verdict = r.group(1)
                        for kv in (r.group(2) or '').split(','):
                            if '=' in kv:
                                k, v = kv.split('=', 1)
                                self.verdict_counts[k.strip()] = int(v)
                        break
                i += 1
                continue
            if 'Exception ignored' in line and i != start:
                self._ignored(i, 'the end of the run')
            if current is not None and line != SEP2:
                current.append(line)
            i += 1
        for tid in self.tracebacks:
            self.tracebacks[tid] = ['\n'.join(t).rstrip()
                                    for t in self.tracebacks[tid]]

    def _check(self):
        """Is this a complete run whose log we understood?"""
        if self.ran is None or self.verdict is None:
            started = [r.tid for r in self.results.values() if not r.events]
            self.problems.append(
                'the run did not finish: no "Ran N tests" summary (crashed, '
                'killed or timed out)%s' % (
                    '; the last test started was ' + started[-1]
                    if started else ''))
        if self.rc is not None:
            if self.rc == 124:
                self.problems.append('the run timed out (exit status 124)')
            elif self.rc == 5 and self.verdict == 'NO TESTS RAN':
                self.problems.append('no tests ran')
            elif self.rc not in (0, 1):
                sig = ''
                if self.rc > 128 or self.rc < 0:
                    n = self.rc - 128 if self.rc > 0 else -self.rc
                    try:
                        sig = ' = ' + signal.Signals(n).name
                    except ValueError:
                        pass
                self.problems.append('the run crashed (exit status %d%s)' %
                                     (self.rc, sig))
            elif self.verdict is not None and \
                    (self.rc == 0) != (self.verdict == 'OK'):
                self.problems.append('exit status %d does not match the '
                                     'summary "%s"' % (self.rc, self.verdict))
        if self.ran is None:
            return
        tests = [r for r in self.results.values()
                 if r.tid.rsplit('.', 1)[-1] not in FIXTURES]
        unresolved = [r.tid for r in tests if not r.events]
        if unresolved:
            self.problems.append('no result found for %d test(s): %s' % (
                len(unresolved), ', '.join(unresolved[:5])))
        if len(tests) != self.ran:
            self.problems.append('the log names %d tests but unittest ran %d:'
                                 ' the log was not understood' %
                                 (len(tests), self.ran))
        # The result line counts every reported event (subtests included).
        events = [k for r in self.results.values() for k, _, _ in r.events]
        for key, kind in (('failures', FAIL), ('errors', ERROR),
                          ('skipped', SKIP), ('expected failures', XFAIL),
                          ('unexpected successes', XPASS)):
            want = self.verdict_counts.get(key, 0)
            if events.count(kind) != want:
                self.problems.append(
                    'the summary says %s=%d but the log shows %d: the log '
                    'was not understood' % (key, want, events.count(kind)))

    # -- views -------------------------------------------------------------
    def norm(self, text):
        return text.replace(self.dev, '<dev>') if self.dev else text

    def outcome(self, tid):
        if tid == IGNORED_ID:
            return (ERROR, '') if self.ignored else (OK, '')
        r = self.results.get(tid)
        if r is None or not r.events:
            return (ABSENT, '')
        return (r.kind, self.norm(r.reason) if r.kind in (SKIP, OK) else '')

    def detail(self, tid):
        """What an allow-list pattern is matched against: the skip reason,
        or for FAIL and ERROR the last line of each traceback (the
        exception), ' / '-separated; device names replaced by <dev>."""
        kind, reason = self.outcome(tid)
        if kind in (FAIL, ERROR):
            last = [tb.strip().splitlines()[-1].strip()
                    for tb in self.tracebacks.get(tid, []) if tb.strip()]
            return self.norm(' / '.join(last))
        return reason

    def counts(self):
        c = dict.fromkeys([OK, SKIP, FAIL, ERROR, XFAIL, XPASS], 0)
        for r in self.results.values():
            if r.events and r.tid.rsplit('.', 1)[-1] not in FIXTURES:
                c[r.kind] += 1
        return c

    def tail(self, n=40):
        return self.lines[-n:]


def show(outcome):
    kind, reason = outcome
    return '%s: %s' % (kind, reason) if reason else kind


# -- allow-list ---------------------------------------------------------------
class Entry:
    def __init__(self, lineno, pattern, raw, migr, reason):
        self.lineno, self.pattern, self.raw, self.migr, self.reason = \
            lineno, pattern, raw, migr, reason
        self.used = 0
        # A flaky difference needs no entry in most runs: never stale.
        self.flaky = reason.lower().startswith('flaky')


def parse_spec(spec):
    """An allow-list outcome: KIND, 'KIND: PATTERN' or '*'."""
    spec = spec.strip()
    if spec == '*':
        return ('*', None)
    kind, _, pat = spec.partition(':')
    kind = kind.strip()
    known = {k.lower(): k for k in
             (OK, SKIP, FAIL, ERROR, XFAIL, XPASS, ABSENT)}
    if kind.lower() not in known:
        raise ValueError('unknown outcome %r (one of: %s, *)' %
                         (kind, ', '.join(sorted(known.values()))))
    kind = known[kind.lower()]
    if pat.strip() and kind not in (SKIP, OK, FAIL, ERROR):
        raise ValueError('only skipped, ok, FAIL and ERROR take a pattern')
    return (kind, pat.strip() or None)


def spec_matches(spec, outcome, detail):
    """Does an allow-list outcome match outcome (and its detail)?"""
    kind, pat = spec
    if kind == '*':
        return True
    if kind != outcome[0]:
        return False
    return pat is None or fnmatch.fnmatchcase(detail, pat)


def load_allowlist(path):
    entries, errors = [], []
    if not path or not os.path.exists(path):
        return entries, errors
    with open(path, encoding='utf-8') as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip('\n')
            if not line.strip() or line.lstrip().startswith('#'):
                continue
            fields = [x.strip() for x in line.split('|', 3)]
            if len(fields) != 4:
                errors.append('%s:%d: want "TEST | RAW | MIGR | REASON"' %
                              (path, n))
                continue
            tid, raw, migr, reason = fields
            if len(reason) < 10:
                errors.append('%s:%d: the reason is mandatory (and must say '
                              'something)' % (path, n))
                continue
            try:
                entries.append(Entry(n, tid, parse_spec(raw),
                                     parse_spec(migr), reason))
            except ValueError as ex:
                errors.append('%s:%d: %s' % (path, n, ex))
    return entries, errors


# -- running -------------------------------------------------------------------
def run_suite(tests_dir, dev, log, timeout):
    """Run rdma-core's run_tests.py on dev into log; return (rc, seconds)."""
    tests_dir = os.path.abspath(tests_dir)
    cmd = ['timeout', '-k', '30', str(timeout), sys.executable, '-u',
           os.path.join(tests_dir, 'run_tests.py'), '--dev', dev, '-v']
    print('running: %s > %s' % (' '.join(cmd), log), flush=True)
    # The fault handler prints the Python stack if the interpreter crashes.
    env = dict(os.environ, PYTHONFAULTHANDLER='1')
    t0 = time.monotonic()
    with open(log, 'w') as out:
        rc = subprocess.call(cmd, stdout=out, stderr=subprocess.STDOUT,
                             cwd=tests_dir, env=env)
    with open(log + '.rc', 'w') as f:
        f.write('%d\n' % rc)
    return rc, time.monotonic() - t0


def read_rc(path):
    try:
        with open(path) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


# -- report --------------------------------------------------------------------
def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split('\n\n')[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('logs', nargs='*', metavar='LOG',
                    help='RAW_LOG MIGR_LOG (without --run)')
    ap.add_argument('--run', metavar='TESTS_DIR',
                    help="run rdma-core's TESTS_DIR/run_tests.py on both "
                    'devices first (with the current PYTHONPATH)')
    ap.add_argument('--log-dir', default='.',
                    help='with --run: where the logs go (default .)')
    ap.add_argument('--timeout', type=int, default=1800,
                    help='with --run: limit per run in seconds')
    ap.add_argument('--raw-dev', default='rxe0')
    ap.add_argument('--migr-dev', default='migr_rxe0')
    ap.add_argument('--raw-rc', type=int, help="the raw run's exit status")
    ap.add_argument('--migr-rc', type=int, help="the migr run's exit status")
    ap.add_argument('--allowlist', default=os.path.join(HERE, 'allowlist.txt'))
    ap.add_argument('--min-tests', type=int, default=1,
                    help='a sane raw run has at least this many tests')
    ap.add_argument('--min-passed', type=int, default=1,
                    help='a sane raw run passes at least this many tests')
    ap.add_argument('--all', action='store_true',
                    help='print every test, not only differences')
    ap.add_argument('--tail', type=int, default=40,
                    help='log lines shown for a broken run')
    args = ap.parse_args()

    walls = [None, None]
    if args.run:
        if args.logs:
            ap.error('--run takes no log arguments')
        os.makedirs(args.log_dir, exist_ok=True)
        logs, rcs = [], []
        for i, dev in enumerate((args.raw_dev, args.migr_dev)):
            log = os.path.join(args.log_dir, 'upstream-%s.log' % dev)
            rc, walls[i] = run_suite(args.run, dev, log, args.timeout)
            logs.append(log)
            rcs.append(rc)
        args.raw_rc, args.migr_rc = rcs
    else:
        if len(args.logs) != 2:
            ap.error('want RAW_LOG and MIGR_LOG (or --run TESTS_DIR)')
        logs = args.logs
        # The runner may leave each exit status next to its log (LOG.rc).
        if args.raw_rc is None:
            args.raw_rc = read_rc(logs[0] + '.rc')
        if args.migr_rc is None:
            args.migr_rc = read_rc(logs[1] + '.rc')

    runs = []
    for log, dev, rc, wall in zip(logs, (args.raw_dev, args.migr_dev),
                                  (args.raw_rc, args.migr_rc), walls):
        try:
            with open(log, encoding='utf-8', errors='replace') as f:
                text = f.read()
        except OSError as ex:
            print('compare.py: cannot read %s: %s' % (log, ex.strerror))
            print('0 passed, 0 failed, 0 skipped')
            return 2
        runs.append(Run(dev, log, text, rc, wall))
    raw, migr = runs

    # Sanity of the reference column.
    rc_raw = raw.counts()
    total_raw = sum(rc_raw.values())
    if raw.ran is not None:
        if total_raw < args.min_tests:
            raw.problems.append('only %d tests (a sane run has at least %d)'
                                % (total_raw, args.min_tests))
        if rc_raw[OK] < args.min_passed:
            raw.problems.append('only %d tests passed (a sane run passes at '
                                'least %d)' % (rc_raw[OK], args.min_passed))

    entries, list_errors = load_allowlist(args.allowlist)
    al = os.path.basename(args.allowlist)

    # Header and counts.
    w = max(len(raw.dev), len(migr.dev), 10)
    print('upstream rdma-core test suite: %s vs %s' % (raw.dev, migr.dev))
    for r in runs:
        bits = []
        if r.ran is not None:
            bits.append('ran %d tests in %.1fs' % (r.ran, r.duration))
        if r.wall is not None:
            bits.append('wall %.0fs' % r.wall)
        if r.rc is not None:
            bits.append('exit status %d' % r.rc)
        print('  %-*s %s%s' % (w, r.dev + ':', r.path,
                               ' (%s)' % ', '.join(bits) if bits else ''))
    print()
    print('  %-22s %*s %*s' % ('', w, raw.dev, w, migr.dev))
    cm = migr.counts()
    rows = [('tests', sum(rc_raw.values()), sum(cm.values()))]
    for label, k in (('passed', OK), ('skipped', SKIP), ('failed', FAIL),
                     ('errors', ERROR), ('expected failures', XFAIL),
                     ('unexpected successes', XPASS)):
        rows.append((label, rc_raw[k], cm[k]))
    rows.append(('"Exception ignored"', len(raw.ignored), len(migr.ignored)))
    for label, a, b in rows:
        print('  %-22s %*d %*d' % (label, w, a, w, b))

    # Differences.
    ids = list(raw.results)
    ids += [t for t in migr.results if t not in raw.results]
    ids = [t for t in ids if t.rsplit('.', 1)[-1] not in FIXTURES or
           raw.outcome(t) != migr.outcome(t)]
    ids.append(IGNORED_ID)
    diffs = []  # (tid, raw outcome, migr outcome, entry or None)
    for tid in ids:
        a, b = raw.outcome(tid), migr.outcome(tid)
        if a == b:
            continue
        entry = None
        for e in entries:
            if fnmatch.fnmatchcase(tid, e.pattern) and \
                    spec_matches(e.raw, a, raw.detail(tid)) and \
                    spec_matches(e.migr, b, migr.detail(tid)):
                entry = e
                e.used += 1
                break
        diffs.append((tid, a, b, entry))
    # Tests a broken run never got to are not differences worth listing.
    cut_short = [d for d in diffs if d[3] is None and
                 ((d[1][0] == ABSENT and raw.problems) or
                  (d[2][0] == ABSENT and migr.problems))]
    diffs = [d for d in diffs if d not in cut_short]
    unexplained = [d for d in diffs if d[3] is None]

    def cut(s, n):
        return s if len(s) <= n else s[:n - 3] + '...'

    if args.all:
        print()
        print('all tests:')
        for tid in ids:
            print('  %-70s %-30s %s' % (tid, cut(show(raw.outcome(tid)), 30),
                                        cut(show(migr.outcome(tid)), 30)))
    print()
    if diffs:
        print('differences: %d (%d allow-listed, %d unexplained)' %
              (len(diffs), len(diffs) - len(unexplained), len(unexplained)))
        tw = min(max(len(d[0]) for d in diffs), 72)
        print('  %-*s  %-28s  %-28s  %s' % (tw, 'test', raw.dev, migr.dev,
                                           'verdict'))
        for tid, a, b, e in diffs:
            print('  %-*s  %-28s  %-28s  %s' % (
                tw, cut(tid, tw), cut(show(a), 28), cut(show(b), 28),
                'allowed (%s:%d)' % (al, e.lineno) if e else
                'UNEXPLAINED'))
        used = [e for e in entries if e.used]
        if used:
            print()
            print('allow-list reasons:')
            for e in used:
                print('  %s:%d (%d test(s)): %s' % (
                    al, e.lineno, e.used, e.reason))
        for tid, a, b, e in unexplained:
            print()
            print('UNEXPLAINED: %s' % tid)
            print('    %-*s %s' % (w + 1, raw.dev + ':', show(a)))
            print('    %-*s %s' % (w + 1, migr.dev + ':', show(b)))
            for r in (raw, migr):
                if tid == IGNORED_ID:
                    for where, text in r.ignored[:5]:
                        print('    --- %s, during %s ---' % (r.dev, where))
                        for l in text.splitlines():
                            print('    | ' + l)
                    if len(r.ignored) > 5:
                        print('    (%d more in %s)' % (len(r.ignored) - 5,
                                                       r.path))
                for tb in r.tracebacks.get(tid, []):
                    print('    --- %s traceback ---' % r.dev)
                    for l in tb.splitlines():
                        print('    | ' + l)
    else:
        print('differences: none')

    if cut_short:
        print('(%d test(s) that a broken run did not report are not listed)'
              % len(cut_short))
    stale = [e for e in entries if not e.used and not e.flaky]
    if stale:
        print()
        print('stale allow-list entries (no longer match a difference; '
              'remove them):')
        for e in stale:
            print('  %s:%d: %s' % (al, e.lineno, e.pattern))
    if list_errors:
        print()
        print('allow-list errors:')
        for m in list_errors:
            print('  ' + m)

    broken = [r for r in runs if r.problems]
    for r in broken:
        print()
        print('*' * 72)
        print('* %s run is BROKEN: %s' % (r.dev, r.path))
        for p in r.problems:
            print('*   - ' + p)
        print('* last %d lines of its log:' % args.tail)
        for l in r.tail(args.tail):
            print('*   | ' + l)
        print('*' * 72)

    print()
    if broken:
        status = 2
        print('result: BROKEN run(s): %s' % ', '.join(r.dev for r in broken))
    elif unexplained or list_errors:
        status = 1
        print('result: %d unexplained difference(s)%s' % (
            len(unexplained), ', allow-list errors' if list_errors else ''))
    else:
        status = 0
        print('result: %s matches %s (%d allow-listed difference(s))' % (
            migr.dev, raw.dev, len(diffs)))
    print('%d passed, %d failed, %d skipped' % (
        sum(cm[k] for k in PASSED_KINDS), sum(cm[k] for k in FAILED_KINDS),
        cm[SKIP]))
    return status


if __name__ == '__main__':
    sys.exit(main())
