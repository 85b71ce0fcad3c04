#!/usr/bin/python3
# fake-systemd.py - a fake org.freedesktop.systemd1 on a (private) session
# bus, for the tests of gpumod's systemd runner.  Run it with
# /usr/bin/python3 (Debian's python3-dbus and python3-gi).
#
#   DBUS_SESSION_BUS_ADDRESS=... GPUMOD_UNIT_DIR=DIR FAKE_SYSTEMD_LOG=FILE \
#       /usr/bin/python3 tests/fakes/fake-systemd.py
#
# It plays the subset of org.freedesktop.systemd1(5) a service manager
# client uses, with systemd 252's names, types and semantics (src/core/
# service.c, job.c, unit.c): the Manager's LoadUnit, GetUnit, StartUnit,
# StopUnit, RestartUnit, KillUnit, ResetFailedUnit, Reload, Subscribe,
# Unsubscribe; the signals JobNew, JobRemoved, Reloading; unit objects
# with the Unit and Service properties and PropertiesChanged; job objects.
# Unit files are read from $GPUMOD_UNIT_DIR (plus NAME.d/*.conf drop-ins).
# Every method call is appended to $FAKE_SYSTEMD_LOG, one line each:
# "Method arg1 arg2 ...".  State changes go to stderr ("fake-systemd: ...").
#
# Where it differs from systemd on purpose (docs/systemd.md "The fake
# systemd"): no cgroups: each process runs in a session of its own and the
# unit's "control group" is every live process of those sessions (a
# process that calls setsid itself escapes); Type=simple|notify|exec all
# behave as exec (active once the exec succeeded; no sd_notify); units are
# never garbage-collected; only services.
#
# Knobs for the tests: FAKE_DELAY_LOADUNIT_MS / FAKE_DELAY_STARTUNIT_MS
# delay those replies (a busy PID 1; the job is queued before the reply,
# as systemd does); FAKE_SYSTEMD_KEEP_UNITS=1: when the bus goes (not on
# SIGTERM) it exits leaving the units' processes running, as systemd keeps
# its units when the bus daemon goes away.
import errno
import json
import os
import signal
import socket
import subprocess
import sys
import time

import dbus
import dbus.service
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

BUS_NAME = "org.freedesktop.systemd1"
MANAGER_PATH = "/org/freedesktop/systemd1"
MANAGER_IFACE = "org.freedesktop.systemd1.Manager"
UNIT_IFACE = "org.freedesktop.systemd1.Unit"
SERVICE_IFACE = "org.freedesktop.systemd1.Service"
JOB_IFACE = "org.freedesktop.systemd1.Job"
PROPS_IFACE = "org.freedesktop.DBus.Properties"
USEC_INFINITY = (1 << 64) - 1
CLD_EXITED, CLD_KILLED, CLD_DUMPED = 1, 2, 3
EXIT_CHDIR, EXIT_EXEC, EXIT_STDOUT = 200, 203, 209
POLL_MS = 50

UNIT_DIR = os.environ.get("GPUMOD_UNIT_DIR", "")
LOG_PATH = os.environ.get("FAKE_SYSTEMD_LOG", "")


def say(msg):
    sys.stderr.write("fake-systemd: %.3f %s\n" % (time.monotonic(), msg))
    sys.stderr.flush()


def log_call(method, *args):
    if not LOG_PATH:
        return
    words = [method] + [str(a) for a in args]
    with open(LOG_PATH, "a") as f:
        f.write(" ".join(words) + "\n")


class Error(dbus.DBusException):
    def __init__(self, name, msg):
        dbus.DBusException.__init__(self, msg, name=name)


def no_such_unit(name):
    return Error("org.freedesktop.systemd1.NoSuchUnit", "Unit %s not found." % name)


def invalid_args(msg):
    return Error("org.freedesktop.DBus.Error.InvalidArgs", msg)


def now_us():
    return time.clock_gettime_ns(time.CLOCK_REALTIME) // 1000, time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000


def bus_label_escape(s):
    """systemd's bus_label_escape(): every byte but [A-Za-z] (and digits
    after the first byte) as _xx, lowercase hex; "" as "_"."""
    if not s:
        return "_"
    out = []
    for i, b in enumerate(s.encode()):
        c = chr(b)
        if ("A" <= c <= "Z") or ("a" <= c <= "z") or (i > 0 and "0" <= c <= "9"):
            out.append(c)
        else:
            out.append("_%02x" % b)
    return "".join(out)


# --- unit file parsing (systemd.syntax(7), systemd.service(5)) ---------------

class BadSetting(Exception):
    pass


def parse_timespan(v, what):
    """parse_sec(): "90s", "1500ms", "1min 30s", "5" (seconds), "infinity" -> usec."""
    v = v.strip()
    if v == "infinity":
        return USEC_INFINITY
    units = {"us": 1, "usec": 1, "ms": 1000, "msec": 1000, "s": 10**6, "sec": 10**6, "second": 10**6,
             "seconds": 10**6, "m": 60 * 10**6, "min": 60 * 10**6, "minute": 60 * 10**6, "minutes": 60 * 10**6,
             "h": 3600 * 10**6, "hr": 3600 * 10**6, "hour": 3600 * 10**6, "hours": 3600 * 10**6,
             "d": 86400 * 10**6, "day": 86400 * 10**6, "days": 86400 * 10**6, "w": 7 * 86400 * 10**6}
    total, i, n = 0, 0, len(v)
    if not v:
        raise BadSetting("%s: empty time span" % what)
    while i < n:
        while i < n and v[i] in " \t":
            i += 1
        j = i
        while j < n and (v[j].isdigit() or v[j] == "."):
            j += 1
        if j == i:
            raise BadSetting("%s: bad time span '%s'" % (what, v))
        num = float(v[i:j])
        while j < n and v[j] in " \t":
            j += 1
        k = j
        while k < n and v[k].isalpha():
            k += 1
        u = v[j:k] or "s"
        if u not in units:
            raise BadSetting("%s: unknown time unit '%s' in '%s'" % (what, u, v))
        total += int(num * units[u])
        i = k
    return total


CESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\",
            '"': '"', "'": "'", "s": " "}


def split_words(s, what):
    """extract_first_word(EXTRACT_UNQUOTE|EXTRACT_CUNESCAPE) over a whole
    line: blanks separate words, '...' and "..." quote, C escapes anywhere.
    Returns [(word, was_quoted_or_escaped)]."""
    words, i, n = [], 0, len(s)
    while True:
        while i < n and s[i] in " \t\n":
            i += 1
        if i >= n:
            return words
        w, quote, special = [], None, False
        while i < n:
            c = s[i]
            if quote is None and c in " \t\n":
                break
            if c == "\\":
                i += 1
                if i >= n:
                    raise BadSetting("%s: a trailing backslash in '%s'" % (what, s))
                e = s[i]
                special = True
                if e in CESCAPES:
                    w.append(CESCAPES[e]); i += 1
                elif e == "x" and i + 2 < n + 0 and all(h in "0123456789abcdefABCDEF" for h in s[i + 1:i + 3]):
                    w.append(chr(int(s[i + 1:i + 3], 16))); i += 3
                elif e in "01234567" and i + 2 < n and all(h in "01234567" for h in s[i:i + 3]):
                    w.append(chr(int(s[i:i + 3], 8))); i += 3
                elif e == "u" and i + 4 < n:
                    w.append(chr(int(s[i + 1:i + 5], 16))); i += 5
                elif e == "U" and i + 8 < n:
                    w.append(chr(int(s[i + 1:i + 9], 16))); i += 9
                elif e == ";":
                    w.append(";"); i += 1
                else:
                    raise BadSetting("%s: unknown escape '\\%s' in '%s'" % (what, e, s))
                continue
            if quote is not None:
                if c == quote:
                    quote = None
                else:
                    w.append(c)
                i += 1
                continue
            if c in "'\"":
                quote, special = c, True
                i += 1
                continue
            w.append(c)
            i += 1
        if quote is not None:
            raise BadSetting("%s: unbalanced quote in '%s'" % (what, s))
        words.append(("".join(w), special))


def specifiers(s, unit, what):
    """The specifiers gpumod may meet: %% %n %N %p %i %h %u %U %t %T %V %H."""
    if "%" not in s:
        return s
    base = unit.split(".")[0]
    prefix, _, inst = base.partition("@")
    table = {"%": "%", "n": unit, "N": base, "p": prefix, "i": inst, "I": inst,
             "h": os.path.expanduser("~"), "u": os.environ.get("USER", str(os.getuid())), "U": str(os.getuid()),
             "t": os.environ.get("XDG_RUNTIME_DIR", "/run"), "T": "/tmp", "V": "/var/tmp",
             "H": socket.gethostname()}
    out, i = [], 0
    while i < len(s):
        if s[i] == "%":
            if i + 1 >= len(s) or s[i + 1] not in table:
                raise BadSetting("%s: unknown specifier '%s' in '%s'" % (what, s[i:i + 2], s))
            out.append(table[s[i + 1]])
            i += 2
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


def parse_exec(value, unit, what):
    """ExecStart=/ExecStartPre= value -> dict(argv, ignore, noenv) or None (empty)."""
    v = value.strip()
    ignore = noenv = False
    argv0 = None
    while v and v[0] in "-@+!:|":
        c = v[0]
        if c == "-":
            ignore = True
        elif c == "@":
            argv0 = True
        elif c == ":":
            noenv = True
        elif c == "|":
            raise BadSetting("%s: the '|' prefix (a login shell) is not supported by the fake" % what)
        v = v[1:]  # '+' and '!' (privileges) change nothing for an unprivileged fake
    words = split_words(v, what)
    if not words:
        return None
    if any(w == ";" and not special for w, special in words):
        raise BadSetting("%s: several commands (';') in one line: only Type=oneshot may do that" % what)
    argv = [specifiers(w, unit, what) for w, _ in words]
    path = argv[0]
    if argv0:
        if len(argv) < 2:
            raise BadSetting("%s: '@' needs the path and argv[0]" % what)
        argv = argv[1:]
        argv[0:1] = [argv[0]]
        exe = path
    else:
        exe = path
    if not path.startswith("/") and "/" in path:
        raise BadSetting("%s: '%s' is neither an absolute path nor a plain name" % (what, path))
    return {"exe": exe, "argv": argv, "ignore": ignore, "noenv": noenv, "line": value.strip()}


def parse_env_line(value, unit, what):
    out = []
    for w, _ in split_words(value, what):
        w = specifiers(w, unit, what)
        k, eq, val = w.partition("=")
        if not eq or not k or not (k[0].isalpha() or k[0] == "_") or not all(c.isalnum() or c == "_" for c in k):
            raise BadSetting("%s: '%s' is not VAR=VALUE" % (what, w))
        out.append((k, val))
    return out


def read_ini(path, sections):
    """Lines of a unit file into sections[sec] = [(key, value)]; '\\' at a
    line's end continues it; '#' and ';' start comments."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    sec, cont = None, ""
    for raw in lines:
        line = cont + raw
        cont = ""
        s = line.strip()
        if not s or s[0] in "#;":
            continue
        if s.endswith("\\"):
            cont = s[:-1] + " "
            continue
        if s.startswith("["):
            sec = s.strip("[]")
            continue
        k, eq, v = s.partition("=")
        if not eq or sec is None:
            raise BadSetting("%s: '%s' is no KEY=VALUE in a section" % (path, s))
        sections.setdefault(sec, []).append((k.strip(), v.strip()))


def signum(v, what):
    v = v.strip()
    if v.isdigit():
        return int(v)
    name = v if v.startswith("SIG") else "SIG" + v
    try:
        return int(getattr(signal.Signals, name))
    except AttributeError:
        raise BadSetting("%s: unknown signal '%s'" % (what, v))


def parse_bool(v, what):
    v = v.strip().lower()
    if v in ("1", "yes", "y", "true", "t", "on"):
        return True
    if v in ("0", "no", "n", "false", "f", "off"):
        return False
    raise BadSetting("%s: '%s' is not a boolean" % (what, v))


def load_config(name):
    """The unit's configuration, or None when no file exists; BadSetting on
    a value systemd would refuse (LoadState bad-setting)."""
    path = os.path.join(UNIT_DIR, name)
    if not UNIT_DIR or not os.path.isfile(path):
        return None
    secs = {}
    read_ini(path, secs)
    dropdir = path + ".d"
    if os.path.isdir(dropdir):
        for dn in sorted(os.listdir(dropdir)):
            if dn.endswith(".conf"):
                read_ini(os.path.join(dropdir, dn), secs)
    c = {"path": path, "mtime": os.stat(path).st_mtime_ns, "Description": name,
         "StartLimitIntervalUSec": 10 * 10**6, "StartLimitBurst": 5,
         "Type": "simple", "ExecStartPre": [], "ExecStart": [], "Environment": [], "WorkingDirectory": "",
         "Restart": "no", "RestartUSec": 100000, "RestartPreventExitStatus": set(),
         "TimeoutStartUSec": 90 * 10**6, "TimeoutStopUSec": 90 * 10**6, "KillMode": "control-group",
         "KillSignal": int(signal.SIGTERM), "SendSIGKILL": True, "StandardOutput": "journal",
         "StandardError": "inherit"}
    for k, v in secs.get("Unit", []):
        what = "%s: [Unit] %s=" % (path, k)
        if k == "Description":
            c["Description"] = v
        elif k == "StartLimitIntervalSec":
            c["StartLimitIntervalUSec"] = parse_timespan(v, what)
        elif k == "StartLimitBurst":
            if not v.isdigit():
                raise BadSetting("%s '%s' is not a number" % (what, v))
            c["StartLimitBurst"] = int(v)
    for k, v in secs.get("Service", []):
        what = "%s: [Service] %s=" % (path, k)
        if k == "Type":
            if v not in ("simple", "exec", "notify", "forking", "oneshot", "dbus", "idle", "notify-reload"):
                raise BadSetting("%s unknown type '%s'" % (what, v))
            if v not in ("simple", "exec", "notify"):
                raise BadSetting("%s Type=%s is not supported by the fake (simple, exec, notify)" % (what, v))
            c["Type"] = v
        elif k in ("ExecStartPre", "ExecStart"):
            if not v:
                c[k] = []
                continue
            cmd = parse_exec(v, name, what)
            if cmd:
                c[k].append(cmd)
        elif k == "Environment":
            if not v:
                c["Environment"] = []
            else:
                c["Environment"] += parse_env_line(v, name, what)
        elif k == "WorkingDirectory":
            c["WorkingDirectory"] = specifiers(v, name, what)
        elif k == "Restart":
            if v not in ("no", "on-success", "on-failure", "on-abnormal", "on-watchdog", "on-abort", "always"):
                raise BadSetting("%s unknown value '%s'" % (what, v))
            c["Restart"] = v
        elif k == "RestartSec":
            c["RestartUSec"] = parse_timespan(v, what)
        elif k == "RestartPreventExitStatus":
            if not v:
                c["RestartPreventExitStatus"] = set()
            for w in v.split():
                c["RestartPreventExitStatus"].add(int(w) if w.isdigit() else ("sig", signum(w, what)))
        elif k in ("TimeoutStartSec", "TimeoutStopSec"):
            c[k.replace("Sec", "USec")] = parse_timespan(v, what)
        elif k == "TimeoutSec":
            c["TimeoutStartUSec"] = c["TimeoutStopUSec"] = parse_timespan(v, what)
        elif k == "KillMode":
            if v not in ("control-group", "mixed", "process", "none"):
                raise BadSetting("%s unknown kill mode '%s'" % (what, v))
            c["KillMode"] = v
        elif k == "KillSignal":
            c["KillSignal"] = signum(v, what)
        elif k == "SendSIGKILL":
            c["SendSIGKILL"] = parse_bool(v, what)
        elif k in ("StandardOutput", "StandardError"):
            c[k] = specifiers(v, name, what)
    if not c["ExecStart"]:
        raise BadSetting("%s: Service has no ExecStart= setting" % path)
    if len(c["ExecStart"]) > 1:
        raise BadSetting("%s: Service has more than one ExecStart= setting, which is only allowed for Type=oneshot"
                         % path)
    return c


def expand_env_argv(argv, env):
    """replace_env_argv(): "$$" -> "$", "${VAR}" inline, a word that is
    exactly "$VAR" split on blanks (nothing when unset)."""
    out = []
    for w in argv:
        if len(w) > 1 and w[0] == "$" and w[1] != "$" and w[1] != "{" and all(c.isalnum() or c == "_" for c in w[1:]):
            val = env.get(w[1:])
            if val is not None:
                out += val.split()
            continue
        r, i = [], 0
        while i < len(w):
            if w.startswith("$$", i):
                r.append("$"); i += 2
            elif w.startswith("${", i) and "}" in w[i:]:
                j = w.index("}", i)
                r.append(env.get(w[i + 2:j], "")); i = j + 1
            else:
                r.append(w[i]); i += 1
        out.append("".join(r))
    return out


# --- processes ----------------------------------------------------------------

def proc_stat(pid):
    """(state, session id) of a live pid, or None."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            s = f.read()
    except OSError:
        return None
    rest = s[s.rindex(")") + 2:].split()
    return rest[0], int(rest[3])


def session_members(sids):
    """Live (not zombie) pids whose session is one of sids."""
    out = []
    if not sids:
        return out
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        st = proc_stat(int(d))
        if st and st[1] in sids and st[0] != "Z":
            out.append(int(d))
    return out


def kill_quiet(pid, sig):
    try:
        os.kill(pid, sig)
        return True
    except OSError:
        return False


def open_output(spec, default, unit, what):
    """StandardOutput=/StandardError= -> a file object, or None to inherit
    the fake's stderr (journal, inherit, kmsg, tty)."""
    for pfx, mode in (("append:", "ab"), ("file:", "r+b"), ("truncate:", "wb")):
        if spec.startswith(pfx):
            p = spec[len(pfx):]
            if mode == "r+b":
                f = open(p, "ab")
                f.seek(0)
                return f
            return open(p, mode)
    if spec == "null":
        return open(os.devnull, "wb")
    return default


# --- D-Bus objects -------------------------------------------------------------

class Props:
    """Properties.Get/GetAll over an interface -> {name: dbus value} map."""

    def props(self, iface):
        return {}

    def get_all(self, iface):
        return dbus.Dictionary(self.props(iface), signature="sv")


class JobObj(dbus.service.Object):
    def __init__(self, mgr, jid, unit, jtype):
        self.mgr, self.id, self.unit, self.type, self.state = mgr, jid, unit, jtype, "waiting"
        self.path = "%s/job/%d" % (MANAGER_PATH, jid)
        dbus.service.Object.__init__(self, mgr.bus, self.path)

    def props(self, iface):
        if iface != JOB_IFACE:
            return {}
        return {"Id": dbus.UInt32(self.id),
                "Unit": dbus.Struct((self.unit.name, dbus.ObjectPath(self.unit.path)), signature="so"),
                "JobType": dbus.String(self.type), "State": dbus.String(self.state)}

    @dbus.service.method(PROPS_IFACE, in_signature="ss", out_signature="v")
    def Get(self, iface, prop):
        log_call("Get", self.path, iface, prop)
        p = self.props(iface)
        if prop not in p:
            raise Error("org.freedesktop.DBus.Error.UnknownProperty", "Unknown property %s.%s" % (iface, prop))
        return p[prop]

    @dbus.service.method(PROPS_IFACE, in_signature="s", out_signature="a{sv}")
    def GetAll(self, iface):
        log_call("GetAll", self.path, iface)
        return dbus.Dictionary(self.props(iface), signature="sv")

    @dbus.service.method(JOB_IFACE, in_signature="", out_signature="")
    def Cancel(self):
        log_call("Cancel", self.path)
        self.mgr.finish_job(self, "canceled")


class Unit(dbus.service.Object):
    def __init__(self, mgr, name):
        self.mgr, self.name = mgr, name
        self.path = "%s/unit/%s" % (MANAGER_PATH, bus_label_escape(name))
        dbus.service.Object.__init__(self, mgr.bus, self.path)
        self.cfg, self.load_error = None, ("", "")
        self.active, self.sub, self.result = "inactive", "dead", "success"
        self.main_pid = self.control_pid = 0
        self.exec_main = {"pid": 0, "code": 0, "status": 0, "start": (0, 0), "exit": (0, 0)}
        self.n_restarts, self.flush_n_restarts = 0, False
        self.forbid_restart = False
        self.allow_restart = True
        self.ts = {k: (0, 0) for k in ("ActiveEnter", "ActiveExit", "InactiveEnter", "InactiveExit", "StateChange")}
        self.job = None
        self.timer = None
        self.poll = None
        self.sids = set()
        self.pre_index = 0
        self.rl_begin, self.rl_num = 0, 0
        self.sent = {UNIT_IFACE: {}, SERVICE_IFACE: {}}
        self.dirty = False
        self.load()
        # a new unit's properties are its starting point, not a change
        self.sent = {iface: self.props(iface) for iface in self.sent}

    # -- configuration
    def load(self):
        try:
            self.cfg = load_config(self.name)
            if self.cfg is None:
                self.load_state = "not-found"
                self.load_error = ("org.freedesktop.systemd1.NoSuchUnit", "Unit %s not found." % self.name)
            else:
                self.load_state, self.load_error = "loaded", ("", "")
        except (BadSetting, OSError, ValueError) as e:
            say("%s: %s" % (self.name, e))
            self.cfg, self.load_state = None, "bad-setting"
            self.load_error = ("org.freedesktop.systemd1.BadUnitSetting", str(e))
        self.changed()

    def need_reload(self):
        if self.cfg is None:
            return bool(UNIT_DIR) and os.path.isfile(os.path.join(UNIT_DIR, self.name))
        try:
            return os.stat(self.cfg["path"]).st_mtime_ns != self.cfg["mtime"]
        except OSError:
            return True

    # -- properties
    def props(self, iface):
        c = self.cfg or {}
        if iface == UNIT_IFACE:
            d = {"Id": dbus.String(self.name), "Names": dbus.Array([self.name], signature="s"),
                 "Description": dbus.String(c.get("Description", self.name)),
                 "LoadState": dbus.String(self.load_state), "ActiveState": dbus.String(self.active),
                 "SubState": dbus.String(self.sub), "FragmentPath": dbus.String(c.get("path", "")),
                 "UnitFileState": dbus.String("disabled" if self.cfg else ""),
                 "NeedDaemonReload": dbus.Boolean(self.need_reload()),
                 "LoadError": dbus.Struct(self.load_error, signature="ss"),
                 "Job": dbus.Struct((dbus.UInt32(self.job.id if self.job else 0),
                                     dbus.ObjectPath(self.job.path if self.job else "/")), signature="uo"),
                 "StartLimitIntervalUSec": dbus.UInt64(c.get("StartLimitIntervalUSec", 10 * 10**6)),
                 "StartLimitBurst": dbus.UInt32(c.get("StartLimitBurst", 5))}
            for k, (rt, mono) in self.ts.items():
                d[k + "Timestamp"] = dbus.UInt64(rt)
                d[k + "TimestampMonotonic"] = dbus.UInt64(mono)
            return d
        if iface == SERVICE_IFACE:
            em = self.exec_main
            running = self.main_pid or self.control_pid or self.active not in ("inactive", "failed")
            d = {"Type": dbus.String(c.get("Type", "simple")), "Restart": dbus.String(c.get("Restart", "no")),
                 "MainPID": dbus.UInt32(self.main_pid), "ControlPID": dbus.UInt32(self.control_pid),
                 "ExecMainPID": dbus.UInt32(em["pid"]), "ExecMainCode": dbus.Int32(em["code"]),
                 "ExecMainStatus": dbus.Int32(em["status"]),
                 "ExecMainStartTimestamp": dbus.UInt64(em["start"][0]),
                 "ExecMainStartTimestampMonotonic": dbus.UInt64(em["start"][1]),
                 "ExecMainExitTimestamp": dbus.UInt64(em["exit"][0]),
                 "ExecMainExitTimestampMonotonic": dbus.UInt64(em["exit"][1]),
                 "Result": dbus.String(self.result), "NRestarts": dbus.UInt32(self.n_restarts),
                 "ControlGroup": dbus.String("/fake.slice/%s" % self.name if running else ""),
                 "TimeoutStartUSec": dbus.UInt64(c.get("TimeoutStartUSec", 90 * 10**6)),
                 "TimeoutStopUSec": dbus.UInt64(c.get("TimeoutStopUSec", 90 * 10**6)),
                 "RestartUSec": dbus.UInt64(c.get("RestartUSec", 100000)),
                 "KillMode": dbus.String(c.get("KillMode", "control-group")),
                 "KillSignal": dbus.Int32(c.get("KillSignal", 15)),
                 "SendSIGKILL": dbus.Boolean(c.get("SendSIGKILL", True)),
                 "StatusText": dbus.String(""), "WorkingDirectory": dbus.String(c.get("WorkingDirectory", "")),
                 "Environment": dbus.Array(["%s=%s" % kv for kv in c.get("Environment", [])], signature="s")}
            return d
        return {}

    @dbus.service.method(PROPS_IFACE, in_signature="ss", out_signature="v")
    def Get(self, iface, prop):
        log_call("Get", self.name, iface, prop)
        p = self.props(iface)
        if prop not in p:
            raise Error("org.freedesktop.DBus.Error.UnknownProperty", "Unknown property %s.%s" % (iface, prop))
        return p[prop]

    @dbus.service.method(PROPS_IFACE, in_signature="s", out_signature="a{sv}")
    def GetAll(self, iface):
        log_call("GetAll", self.name, iface)
        return dbus.Dictionary(self.props(iface), signature="sv")

    @dbus.service.signal(PROPS_IFACE, signature="sa{sv}as")
    def PropertiesChanged(self, iface, changed, invalidated):
        pass

    # the Unit interface's own methods, as systemctl calls them on the unit
    @dbus.service.method(UNIT_IFACE, in_signature="s", out_signature="o")
    def Start(self, mode):
        return self.mgr.StartUnit(self.name, mode)

    @dbus.service.method(UNIT_IFACE, in_signature="s", out_signature="o")
    def Stop(self, mode):
        return self.mgr.StopUnit(self.name, mode)

    def changed(self):
        """Queue PropertiesChanged (sent from the main loop, coalesced, as
        systemd's D-Bus queue does)."""
        if not self.dirty:
            self.dirty = True
            GLib.idle_add(self.flush_changes)

    def flush_changes(self):
        self.dirty = False
        for iface in (SERVICE_IFACE, UNIT_IFACE):
            cur = self.props(iface)
            old = self.sent[iface]
            diff = {k: v for k, v in cur.items() if k not in old or old[k] != v}
            self.sent[iface] = cur
            if diff and self.mgr.subscribed():
                self.PropertiesChanged(iface, dbus.Dictionary(diff, signature="sv"), dbus.Array([], signature="s"))
        return False

    # -- state
    def set_state(self, active, sub):
        old = self.active
        rt = now_us()
        if active != old:
            if active == "active":
                self.ts["ActiveEnter"] = rt
            if old == "active":
                self.ts["ActiveExit"] = rt
            if active in ("inactive", "failed") and old not in ("inactive", "failed"):
                self.ts["InactiveEnter"] = rt
            if old in ("inactive", "failed") and active not in ("inactive", "failed"):
                self.ts["InactiveExit"] = rt
        if (active, sub) != (self.active, self.sub):
            self.ts["StateChange"] = rt
            say("%s: %s/%s (result %s)" % (self.name, active, sub, self.result))
        self.active, self.sub = active, sub
        self.changed()
        self.mgr.process_job(self)

    def arm(self, usec, fn):
        self.disarm()
        if usec != USEC_INFINITY:
            self.timer = GLib.timeout_add(max(1, usec // 1000), self._fire, fn)

    def _fire(self, fn):
        self.timer = None
        fn()
        return False

    def disarm(self):
        if self.timer is not None:
            GLib.source_remove(self.timer)
            self.timer = None

    def members(self):
        return session_members(self.sids)

    def spawn(self, cmd, what):
        """Start one command in a session of its own; the pid, or raise
        OSError with .exit_status set as systemd would report it."""
        c = self.cfg
        env = dict(os.environ)
        env.pop("NOTIFY_SOCKET", None)
        env.update(dict(c["Environment"]))
        argv = cmd["argv"] if cmd["noenv"] else expand_env_argv(cmd["argv"], env)
        exe = cmd["exe"] if cmd["noenv"] else expand_env_argv([cmd["exe"]], env)[0]
        cwd = c["WorkingDirectory"] or None
        optional_cwd = False
        if cwd and cwd.startswith("-"):
            cwd, optional_cwd = cwd[1:], True
        if cwd == "~":
            cwd = os.path.expanduser("~")
        if cwd and not os.path.isdir(cwd):
            if optional_cwd:
                cwd = None
            else:
                e = OSError(errno.ENOENT, "WorkingDirectory %s" % cwd)
                e.exit_status = EXIT_CHDIR
                raise e
        try:
            out = open_output(c["StandardOutput"], None, self.name, "StandardOutput")
            err = out if c["StandardError"] == "inherit" else open_output(c["StandardError"], None, self.name,
                                                                          "StandardError")
        except OSError as e:
            e.exit_status = EXIT_STDOUT
            raise
        try:
            p = subprocess.Popen(argv, executable=exe, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                                 stdout=out if out else sys.stderr, stderr=err if err else sys.stderr,
                                 start_new_session=True, close_fds=True)
        except OSError as e:
            e.exit_status = EXIT_EXEC
            raise
        finally:
            for f in {out, err}:
                if f is not None:
                    f.close()
        self.mgr.procs[p.pid] = p
        GLib.child_watch_add(GLib.PRIORITY_HIGH, p.pid, self.mgr.child_watch)
        self.sids.add(p.pid)
        say("%s: %s pid %d: %s" % (self.name, what, p.pid, " ".join(argv)))
        return p.pid

    def start(self):
        """service_start(): False when the start limit refused it."""
        c = self.cfg
        now = time.monotonic_ns() // 1000
        iv, burst = c["StartLimitIntervalUSec"], c["StartLimitBurst"]
        if iv > 0 and burst > 0:
            if self.rl_begin == 0 or now - self.rl_begin > iv:
                self.rl_begin, self.rl_num = now, 0
            if self.rl_num >= burst:
                self.rl_num += 1
                say("%s: start request repeated too quickly" % self.name)
                self.disarm()
                self.result = "start-limit-hit"
                self.flush_n_restarts = True
                self.set_state("failed", "failed")
                return False
            self.rl_num += 1
        if self.flush_n_restarts:
            self.n_restarts, self.flush_n_restarts = 0, False
        self.result, self.forbid_restart = "success", False
        self.exec_main = {"pid": 0, "code": 0, "status": 0, "start": (0, 0), "exit": (0, 0)}
        self.sids = set()
        self.pre_index = 0
        self.arm(c["TimeoutStartUSec"], self.start_timeout)
        self.set_state("activating", "start-pre")
        self.next_pre()
        return True

    def next_pre(self):
        pres = self.cfg["ExecStartPre"]
        if self.pre_index >= len(pres):
            self.enter_start()
            return
        cmd = pres[self.pre_index]
        try:
            self.control_pid = self.spawn(cmd, "ExecStartPre")
        except OSError as e:
            say("%s: ExecStartPre %s: %s" % (self.name, cmd["exe"], e))
            self.control_pid = 0
            if cmd["ignore"]:
                self.pre_index += 1
                self.next_pre()
                return
            self.result = "exit-code"
            self.enter_final()
            return
        self.changed()

    def enter_start(self):
        try:
            pid = self.spawn(self.cfg["ExecStart"][0], "ExecStart")
        except OSError as e:
            say("%s: ExecStart %s: %s" % (self.name, self.cfg["ExecStart"][0]["exe"], e))
            t = now_us()
            self.exec_main.update(code=CLD_EXITED, status=e.exit_status, start=t, exit=t)
            self.result = "exit-code"
            self.enter_final()
            return
        self.disarm()  # Type=exec: started once the exec succeeded
        self.main_pid = pid
        self.exec_main.update(pid=pid, start=now_us())
        self.set_state("active", "running")

    def start_timeout(self):
        say("%s: start operation timed out" % self.name)
        self.result = "timeout"
        self.enter_signal("stop-sigterm", allow_restart=True)

    def child_exited(self, pid, wstatus):
        if os.WIFEXITED(wstatus):
            code, st = CLD_EXITED, os.WEXITSTATUS(wstatus)
        elif os.WCOREDUMP(wstatus):
            code, st = CLD_DUMPED, os.WTERMSIG(wstatus)
        else:
            code, st = CLD_KILLED, os.WTERMSIG(wstatus)
        clean = (code == CLD_EXITED and st == 0) or (code == CLD_KILLED and st in (1, 2, 13, 15))
        f = "success" if clean else {CLD_EXITED: "exit-code", CLD_KILLED: "signal", CLD_DUMPED: "core-dump"}[code]
        if pid == self.main_pid:
            say("%s: main process %d exited, code=%d status=%d" % (self.name, pid, code, st))
            self.main_pid = 0
            self.exec_main.update(code=code, status=st, exit=now_us())
            if self.result == "success":
                self.result = f
            if self.sub == "running":
                self.enter_final()
            else:
                self.changed()
                self.check_stopped()
        elif pid == self.control_pid:
            self.control_pid = 0
            say("%s: control process %d exited, code=%d status=%d" % (self.name, pid, code, st))
            if self.sub == "start-pre":
                cmd = self.cfg["ExecStartPre"][self.pre_index]
                if f == "success" or cmd["ignore"]:
                    self.pre_index += 1
                    self.next_pre()
                else:
                    self.result = f
                    self.enter_final()
            else:
                self.changed()
                self.check_stopped()

    def kill_set(self, sig, whom):
        """Signal the main process, the control process, or all (the
        sessions of this unit's processes)."""
        pids = set()
        if whom in ("main", "all") and self.main_pid:
            pids.add(self.main_pid)
        if whom in ("control", "all") and self.control_pid:
            pids.add(self.control_pid)
        if whom == "all":
            pids.update(self.members())
        for p in pids:
            kill_quiet(p, sig)
        return pids

    def enter_final(self):
        """The main (or a control) process is gone outside a stop: kill
        what remains of the group (final-sigterm), then dead."""
        self.disarm()
        if self.control_pid:
            kill_quiet(self.control_pid, self.cfg["KillSignal"])
        self.enter_signal("final-sigterm", allow_restart=True)

    def enter_signal(self, state, allow_restart):
        c = self.cfg
        self.allow_restart = allow_restart
        mode = c["KillMode"]
        if state.endswith("sigkill"):
            sig = signal.SIGKILL
        else:
            sig = c["KillSignal"]
        if mode == "control-group":
            self.kill_set(sig, "all")
        elif mode == "mixed":
            if state.endswith("sigkill"):
                self.kill_set(sig, "all")
            else:
                self.kill_set(sig, "main")
                self.kill_set(sig, "control")
                if not self.main_pid and not self.control_pid:
                    self.kill_set(signal.SIGKILL, "all")
        elif mode == "process":
            self.kill_set(sig, "main")
            self.kill_set(sig, "control")
        if self.stopped():  # nothing to wait for: straight to dead, as systemd does
            self.enter_dead()
            return
        self.set_state("deactivating", state)
        self.arm(c["TimeoutStopUSec"], self.stop_timeout)
        if self.poll is None:
            self.poll = GLib.timeout_add(POLL_MS, self._poll)

    def stopped(self):
        if self.main_pid or self.control_pid:
            return False
        if self.cfg["KillMode"] in ("process", "none"):
            return True
        return not self.members()

    def _poll(self):
        if self.sub in ("stop-sigterm", "stop-sigkill", "final-sigterm", "final-sigkill"):
            if self.cfg["KillMode"] == "mixed" and not self.main_pid and not self.control_pid:
                self.kill_set(signal.SIGKILL, "all")
            if self.stopped():
                self.poll = None
                self.enter_dead()
                return False
            return True
        self.poll = None
        return False

    def check_stopped(self):
        if self.sub in ("stop-sigterm", "stop-sigkill", "final-sigterm", "final-sigkill") and self.stopped():
            self.enter_dead()

    def stop_timeout(self):
        say("%s: %s timed out" % (self.name, self.sub))
        if self.result == "success":
            self.result = "timeout"
        if self.sub in ("stop-sigterm", "final-sigterm") and self.cfg["SendSIGKILL"]:
            self.enter_signal(self.sub.replace("sigterm", "sigkill"), self.allow_restart)
        else:
            say("%s: processes still around after %s, ignoring" % (self.name, self.sub))
            self.enter_dead()

    def shall_restart(self):
        if self.forbid_restart or not self.allow_restart:
            return False
        em = self.exec_main
        prevent = self.cfg["RestartPreventExitStatus"]
        if (em["code"] == CLD_EXITED and em["status"] in prevent) or \
                (em["code"] in (CLD_KILLED, CLD_DUMPED) and ("sig", em["status"]) in prevent):
            return False
        r, res = self.cfg["Restart"], self.result
        return {"no": False, "always": True, "on-success": res == "success",
                "on-failure": res != "success", "on-abnormal": res in ("signal", "core-dump", "timeout", "watchdog"),
                "on-watchdog": res == "watchdog", "on-abort": res in ("signal", "core-dump")}[r]

    def enter_dead(self):
        self.disarm()
        self.main_pid = self.control_pid = 0
        if self.shall_restart():
            self.arm(self.cfg["RestartUSec"], self.auto_restart)
            self.set_state("activating", "auto-restart")
            return
        self.flush_n_restarts = True
        if self.result == "success":
            self.set_state("inactive", "dead")
        else:
            self.set_state("failed", "failed")

    def auto_restart(self):
        """service_enter_restart(): a restart job (or the pending start job,
        merged into it), NRestarts counted before the start limit test."""
        self.n_restarts += 1
        self.flush_n_restarts = False
        say("%s: scheduled restart job, restart counter is at %d" % (self.name, self.n_restarts))
        if self.job is None:
            self.mgr.new_job(self, "restart")
        else:
            self.job.type = "restart"
        self.job.state = "running"
        self.start()

    def stop(self):
        """service_stop(): never followed by a restart."""
        self.forbid_restart = True
        if self.sub == "auto-restart":
            self.disarm()
            self.set_state("inactive", "dead")
        elif self.sub in ("start-pre", "running"):
            self.enter_signal("stop-sigterm", allow_restart=False)
        elif self.sub == "final-sigterm":
            self.sub = "stop-sigterm"
            self.set_state("deactivating", "stop-sigterm")


class Manager(dbus.service.Object):
    def __init__(self, bus):
        self.bus = bus
        dbus.service.Object.__init__(self, bus, MANAGER_PATH)
        self.units = {}
        self.procs = {}
        self.jobs = {}
        self.next_job = 1
        self.subscribers = set()
        bus.add_signal_receiver(self.name_owner_changed, "NameOwnerChanged", "org.freedesktop.DBus",
                                path="/org/freedesktop/DBus")

    def name_owner_changed(self, name, old, new):
        if name in self.subscribers and not new:
            self.subscribers.discard(name)

    def subscribed(self):
        return bool(self.subscribers)

    def unit(self, name):
        u = self.units.get(name)
        if u is None:
            if not name.endswith(".service") or "/" in name or not name[:-8]:
                raise invalid_args("Unit name %s is not valid (the fake knows services only)." % name)
            u = self.units[name] = Unit(self, name)
        return u

    def loaded(self, name):
        u = self.units.get(name)
        if u is None:
            raise Error("org.freedesktop.systemd1.NoSuchUnit", "Unit %s not loaded." % name)
        return u

    # -- jobs
    def new_job(self, u, jtype):
        j = JobObj(self, self.next_job, u, jtype)
        self.next_job += 1
        self.jobs[j.id] = j
        u.job = j
        u.changed()
        if self.subscribed():
            self.JobNew(dbus.UInt32(j.id), dbus.ObjectPath(j.path), u.name)
        return j

    def finish_job(self, j, result):
        if j.id not in self.jobs:
            return
        del self.jobs[j.id]
        if j.unit.job is j:
            j.unit.job = None
            j.unit.changed()
        say("%s: job %d %s finished, result=%s" % (j.unit.name, j.id, j.type, result))
        j.remove_from_connection()
        if self.subscribed():
            self.JobRemoved(dbus.UInt32(j.id), dbus.ObjectPath(j.path), j.unit.name, result)

    def run_job(self, j):
        """job_run_and_invalidate(), from the main loop."""
        if j.id not in self.jobs:
            return False
        u = j.unit
        if j.type == "start":
            if u.active == "active":
                self.finish_job(j, "done")
            elif u.sub in ("start-pre", "start"):
                j.state = "running"
            elif u.active == "deactivating" or u.sub == "auto-restart":
                j.state = "waiting"  # -EAGAIN: run again when the unit settles
            else:
                j.state = "running"
                u.start()  # a refusal (start limit) fails the job through process_job
        elif j.type == "stop":
            if u.active in ("inactive", "failed"):
                self.finish_job(j, "done")
            else:
                j.state = "running"
                u.stop()
        elif j.type == "restart":
            if u.active in ("inactive", "failed"):
                j.type = "start"
                self.run_job(j)
            else:
                j.state = "running"
                u.stop()
        return False

    def process_job(self, u):
        """unit_process_job() after a state change."""
        j = u.job
        if j is None:
            return
        if j.state == "waiting":
            if u.active in ("inactive", "failed", "active"):
                GLib.idle_add(self.run_job, j)
            return
        if j.type == "start":
            if u.active == "active":
                self.finish_job(j, "done")
            elif u.active in ("inactive", "failed"):
                self.finish_job(j, "failed" if u.active == "failed" else "done")
        elif j.type == "stop":
            if u.active in ("inactive", "failed"):
                self.finish_job(j, "done")
        elif j.type == "restart":
            if u.active in ("inactive", "failed") and u.forbid_restart:
                j.type, j.state = "start", "waiting"
                GLib.idle_add(self.run_job, j)
            elif u.active == "active" and not u.forbid_restart:
                self.finish_job(j, "done")
            elif u.active == "failed":
                self.finish_job(j, "failed")

    def enqueue(self, u, jtype, mode):
        if mode not in ("replace", "fail", "isolate", "ignore-dependencies", "ignore-requirements", "flush",
                        "replace-irreversibly", "triggering"):
            raise invalid_args("Job mode %s invalid." % mode)
        if u.load_state == "not-found":
            raise Error("org.freedesktop.systemd1.NoSuchUnit", "Unit %s not found." % u.name)
        if u.load_state == "bad-setting":
            raise Error("org.freedesktop.systemd1.BadUnitSetting",
                        "Unit %s has a bad unit file setting." % u.name)
        old = u.job
        if old is not None:
            conflict = (old.type == "stop") != (jtype == "stop")
            if conflict:
                if mode == "fail":
                    raise Error("org.freedesktop.systemd1.TransactionIsDestructive",
                                "Transaction for %s/%s is destructive (%s has '%s' job queued, but '%s' is included "
                                "in transaction)." % (u.name, jtype, u.name, old.type, jtype))
                self.finish_job(old, "canceled")
            else:
                if jtype == "restart" and old.type == "start":
                    old.type = "restart"
                    if old.state == "running" and u.active == "active":
                        old.state = "waiting"
                        GLib.idle_add(self.run_job, old)
                return old.path
        j = self.new_job(u, jtype)
        GLib.idle_add(self.run_job, j)
        return j.path

    # -- methods
    @dbus.service.method(MANAGER_IFACE, in_signature="s", out_signature="o", async_callbacks=("ok", "err"))
    def LoadUnit(self, name, ok, err):
        log_call("LoadUnit", name)
        path = dbus.ObjectPath(self.unit(name).path)
        d = int(os.environ.get("FAKE_DELAY_LOADUNIT_MS", "0"))
        if d:
            GLib.timeout_add(d, lambda: (ok(path), False)[1])
        else:
            ok(path)

    @dbus.service.method(MANAGER_IFACE, in_signature="s", out_signature="o")
    def GetUnit(self, name):
        log_call("GetUnit", name)
        return dbus.ObjectPath(self.loaded(name).path)

    @dbus.service.method(MANAGER_IFACE, in_signature="ss", out_signature="o", async_callbacks=("ok", "err"))
    def StartUnit(self, name, mode, ok, err):
        log_call("StartUnit", name, mode)
        path = dbus.ObjectPath(self.enqueue(self.unit(name), "start", mode))
        d = int(os.environ.get("FAKE_DELAY_STARTUNIT_MS", "0"))
        if d:
            GLib.timeout_add(d, lambda: (ok(path), False)[1])
        else:
            ok(path)

    @dbus.service.method(MANAGER_IFACE, in_signature="ss", out_signature="o")
    def StopUnit(self, name, mode):
        log_call("StopUnit", name, mode)
        return dbus.ObjectPath(self.enqueue(self.unit(name), "stop", mode))

    @dbus.service.method(MANAGER_IFACE, in_signature="ss", out_signature="o")
    def RestartUnit(self, name, mode):
        log_call("RestartUnit", name, mode)
        return dbus.ObjectPath(self.enqueue(self.unit(name), "restart", mode))

    @dbus.service.method(MANAGER_IFACE, in_signature="ssi", out_signature="")
    def KillUnit(self, name, whom, sig):
        log_call("KillUnit", name, whom, int(sig))
        u = self.loaded(name)
        base = whom[:-5] if whom.endswith("-fail") else whom
        if base not in ("main", "control", "all"):
            raise invalid_args("Invalid who argument %s" % whom)
        if sig <= 0 or sig >= 65:
            raise invalid_args("Signal number out of range.")
        if base == "main" and not u.main_pid:
            raise Error("org.freedesktop.systemd1.NoSuchProcess", "No main process to kill")
        if base == "control" and not u.control_pid:
            raise Error("org.freedesktop.systemd1.NoSuchProcess", "No control process to kill")
        killed = u.kill_set(int(sig), base)
        if not killed and whom.endswith("-fail"):
            raise Error("org.freedesktop.systemd1.NoSuchProcess", "No matching processes to kill")

    @dbus.service.method(MANAGER_IFACE, in_signature="s", out_signature="")
    def ResetFailedUnit(self, name):
        log_call("ResetFailedUnit", name)
        u = self.loaded(name)
        u.rl_begin, u.rl_num = 0, 0
        u.n_restarts, u.flush_n_restarts = 0, False
        if u.active == "failed":
            u.result = "success"
            u.set_state("inactive", "dead")
        else:
            u.result = "success"
            u.changed()

    @dbus.service.method(MANAGER_IFACE, in_signature="", out_signature="")
    def Reload(self):
        log_call("Reload")
        if self.subscribed():
            self.Reloading(True)
        for u in self.units.values():
            u.load()
        if self.subscribed():
            self.Reloading(False)

    @dbus.service.method(MANAGER_IFACE, in_signature="", out_signature="", sender_keyword="sender")
    def Subscribe(self, sender=None):
        log_call("Subscribe")
        self.subscribers.add(sender)

    @dbus.service.method(MANAGER_IFACE, in_signature="", out_signature="", sender_keyword="sender")
    def Unsubscribe(self, sender=None):
        log_call("Unsubscribe")
        if sender not in self.subscribers:
            raise Error("org.freedesktop.systemd1.NotSubscribed", "Client is not subscribed.")
        self.subscribers.discard(sender)

    @dbus.service.method(PROPS_IFACE, in_signature="ss", out_signature="v")
    def Get(self, iface, prop):
        log_call("Get", MANAGER_PATH, iface, prop)
        p = self.manager_props(iface)
        if prop not in p:
            raise Error("org.freedesktop.DBus.Error.UnknownProperty", "Unknown property %s.%s" % (iface, prop))
        return p[prop]

    @dbus.service.method(PROPS_IFACE, in_signature="s", out_signature="a{sv}")
    def GetAll(self, iface):
        log_call("GetAll", MANAGER_PATH, iface)
        return dbus.Dictionary(self.manager_props(iface), signature="sv")

    def manager_props(self, iface):
        if iface != MANAGER_IFACE:
            return {}
        return {"Version": dbus.String("252 (fake-systemd)"), "SystemState": dbus.String("running"),
                "NNames": dbus.UInt32(len(self.units)), "NJobs": dbus.UInt32(len(self.jobs)),
                "UnitPath": dbus.Array([UNIT_DIR], signature="s")}

    @dbus.service.signal(MANAGER_IFACE, signature="uos")
    def JobNew(self, jid, path, unit):
        pass

    @dbus.service.signal(MANAGER_IFACE, signature="uoss")
    def JobRemoved(self, jid, path, unit, result):
        pass

    @dbus.service.signal(MANAGER_IFACE, signature="b")
    def Reloading(self, active):
        pass

    # -- children
    def child_watch(self, pid, st, *_):
        """GLib reaped a child: hand it to its unit."""
        p = self.procs.pop(pid, None)
        if p is not None:
            p.returncode = os.waitstatus_to_exitcode(st)
        for u in list(self.units.values()):
            if pid in (u.main_pid, u.control_pid):
                u.child_exited(pid, st)
                break

    def reap(self):
        """After the main loop: reap what exited (no GLib dispatch now)."""
        for pid, p in list(self.procs.items()):
            try:
                r, st = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                r, st = pid, 0
            if r == pid:
                p.returncode = 0
                self.procs.pop(pid, None)
                for u in self.units.values():
                    if u.main_pid == pid:
                        u.main_pid = 0
                    if u.control_pid == pid:
                        u.control_pid = 0

    def shutdown(self):
        """SIGTERM: every unit's processes get SIGTERM, SIGKILL 2 s later."""
        for u in self.units.values():
            u.disarm()
            u.kill_set(signal.SIGTERM, "all")
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            self.reap()
            if not any(u.main_pid or u.control_pid or u.members() for u in self.units.values()):
                break
            time.sleep(0.05)
        for u in self.units.values():
            u.kill_set(signal.SIGKILL, "all")
        self.reap()


def main():
    if len(sys.argv) > 1:
        sys.stderr.write("usage: fake-systemd.py (environment: DBUS_SESSION_BUS_ADDRESS, GPUMOD_UNIT_DIR, "
                         "FAKE_SYSTEMD_LOG)\n")
        return 2
    if not os.environ.get("DBUS_SESSION_BUS_ADDRESS"):
        say("DBUS_SESSION_BUS_ADDRESS is not set: start a private bus first (dbus-daemon --session "
            "--print-address --fork, or dbus-run-session)")
        return 2
    if not UNIT_DIR or not os.path.isdir(UNIT_DIR):
        say("GPUMOD_UNIT_DIR '%s' is not a directory: expected the unit files' directory" % UNIT_DIR)
        return 2
    # the services get default signal dispositions, as systemd gives them
    # (a shell's '&' leaves SIGINT and SIGQUIT ignored, and that would stick)
    for s in (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(s, signal.SIG_DFL)
    DBusGMainLoop(set_as_default=True)
    loop = GLib.MainLoop()
    bus = dbus.bus.BusConnection(os.environ["DBUS_SESSION_BUS_ADDRESS"])
    bus.set_exit_on_disconnect(False)
    mgr = Manager(bus)

    bus_gone = []

    def quit_(*_):
        say("SIGTERM: stopping every unit's processes and exiting")
        loop.quit()
        return False

    def disconnected(*_):
        bus_gone.append(True)
        say("the bus went: exiting")
        loop.quit()

    GLib.unix_signal_add(GLib.PRIORITY_HIGH, signal.SIGTERM, quit_)
    GLib.unix_signal_add(GLib.PRIORITY_HIGH, signal.SIGINT, quit_)
    bus.add_signal_receiver(disconnected, "Disconnected", "org.freedesktop.DBus.Local",
                            path="/org/freedesktop/DBus/Local")
    r = bus.request_name(BUS_NAME, dbus.bus.NAME_FLAG_DO_NOT_QUEUE)
    if r not in (dbus.bus.REQUEST_NAME_REPLY_PRIMARY_OWNER, dbus.bus.REQUEST_NAME_REPLY_ALREADY_OWNER):
        say("cannot own %s on %s (someone else has it)" % (BUS_NAME, os.environ["DBUS_SESSION_BUS_ADDRESS"]))
        return 1
    say("ready: %s on %s, units from %s" % (BUS_NAME, os.environ["DBUS_SESSION_BUS_ADDRESS"], UNIT_DIR))
    loop.run()
    if bus_gone and os.environ.get("FAKE_SYSTEMD_KEEP_UNITS") == "1":
        # as systemd when the bus connection (not systemd) goes: the units' processes run on
        say("exiting; FAKE_SYSTEMD_KEEP_UNITS=1: the units' processes keep running")
        return 0
    mgr.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
