#!/usr/bin/env python3
"""fakehf.py - a fake of the Hugging Face Hub's endpoints and its CDN, on
loopback, over the tree tests/fakes/hfgen.py builds.

    python3 tests/fakes/fakehf.py --root DIR --port-file FILE [--log FILE]
                                  [--hub-addr 127.0.0.1] [--cdn-addr 127.0.0.2] [-v]

Two ThreadingHTTPServers (HTTP/1.1, keep-alive) on ports the kernel picks:
the hub on --hub-addr and the "CDN" on --cdn-addr.  Once both listen,
"HUBPORT CDNPORT\\n" is written to FILE atomically (a temporary file, then
rename).  SIGTERM or SIGINT: exit 0.  Python 3.11 standard library only.

What each endpoint answers, and which public source gave the shape
(huggingface_hub = github.com/huggingface/huggingface_hub, src/huggingface_hub;
@huggingface/hub = github.com/huggingface/huggingface.js, packages/hub/src):

GET /api/models?search=&author=&filter=&pipeline_tag=&sort=&direction=&limit=
    A JSON array of {"_id", "id", "modelId", "author", "downloads", "likes",
    "tags", "pipeline_tag", "private": false, "gated": false|"auto",
    "lastModified", "createdAt", "library_name": "gguf"}.  search: a
    case-insensitive substring of the id; author: equal; filter (repeatable,
    all must match): a tag; pipeline_tag: equal; sort: downloads (default),
    likes, lastModified, createdAt or id, direction -1 (default) or 1;
    limit: 1..1000 (default and cap 1000; larger is capped), anything else
    400 {"error"}.  One page (no Link header: a limit ends the listing).
    Params: hf_api.py list_models (search, author, filter, pipeline_tag,
    sort, limit); the item: @huggingface/hub types/api/api-model.ts
    ApiModelInfo and hf_api.py ModelInfo.
GET /api/models/{org}/{repo}[/revision/{rev}][?blobs=true]
    Model info: the fields above plus "sha", "siblings": [{"rfilename"}]
    (with blobs=true also "size", "blobId", "lfs": {"sha256", "size",
    "pointerSize"}), "cardData", "config", "gguf": {"architecture",
    "context_length", "total"}, "usedStorage", "disabled": false.
    hf_api.py model_info (the /revision/ URL, blobs=true) and ModelInfo /
    RepoSibling (which keys it reads).  Unknown repo: 404 {"error":
    "Repository not found"}, X-Error-Code RepoNotFound.
GET /api/models/{org}/{repo}/tree/{rev}[/{path}]?recursive=&expand=&cursor=
    A JSON array of {"type": "file", "oid": git blob id, "size", "path",
    ["lfs": {"oid": sha256, "size", "pointerSize"}]} (lfs for *.gguf only)
    and {"type": "directory", "oid", "size": 0, "path"}; folders are listed
    in recursive listings too (hf_api.py list_repo_tree: "List a repo
    tree's files and folders ... recursively").  At most 8 entries a page;
    when more remain, Link: <http://HUB/api/models/.../tree/main?...&cursor=C>;
    rel="next" (utils/_pagination.py follows response.links["next"];
    @huggingface/hub lib/list-files.ts parses the same header).  path may be
    percent-encoded (hf_api.py quotes it with safe="").  The oid of an LFS
    file is the git blob id of its pointer file, as on the Hub (hf_api.py's
    list_repo_tree docstring; ListFileEntry in lib/list-files.ts).
    Unknown revision: 404 {"error": "Revision not found"}, X-Error-Code
    RevisionNotFound; unknown folder: 404 EntryNotFound.
GET|HEAD /{org}/{repo}/resolve/{rev}/{path}
    An LFS file (*.gguf): 302, Location http://CDN/cdn/{org}/{repo}/{path}?sig=S,
    X-Linked-Size, X-Linked-Etag: "<sha256>", X-Repo-Commit, ETag (the
    pointer's git blob id, quoted).  A plain file (config.json, README.md):
    200 with its bytes, ETag "<git blob id>", X-Repo-Commit, Range as the
    CDN.  file_download.py get_hf_file_metadata (HEAD without following
    redirects; X-Linked-Etag before ETag; X-Linked-Size before
    Content-Length; X-Repo-Commit; Location) and constants.py
    (HUGGINGFACE_CO_URL_TEMPLATE = {endpoint}/{repo_id}/resolve/{revision}/{filename}).
    Missing file: 404 EntryNotFound.
Errors carry {"error": message}, X-Error-Code and X-Error-Message, which
utils/_http.py hf_raise_for_status maps to RepositoryNotFoundError,
RevisionNotFoundError, EntryNotFoundError, GatedRepoError.
Revisions: "main" or the repo's own commit sha (what a client pins after a
first HEAD); anything else is RevisionNotFound.

Gated repos (meta "gated": true): the API (model info, tree) and resolve
answer 401 without "Authorization: Bearer hf_fake_token_123" and 403 with
another token (both X-Error-Code GatedRepo); the listing shows them with
"gated": "auto".  The CDN never checks a token: its URL is signed.

CDN GET|HEAD /cdn/{org}/{repo}/{path}?sig=S
    The bytes, Accept-Ranges: bytes, Content-Length, ETag "<sha256 as
    listed>", Last-Modified; Range bytes=a-b, a- or -n: 206 with
    Content-Range: bytes a-b/total; several ranges: ignored (200); an
    unsatisfiable range: 416 with Content-Range: bytes */total; If-Range not
    equal to the ETag (or Last-Modified): 200, the whole file.  A missing or
    wrong sig: 403.  Any Authorization header: 400 {"error": "token
    forwarded to the CDN"} (logged, and said on stderr): a client must not
    send its Hub token to the CDN.  Files are read with os.pread in 1 MiB
    chunks (sparse holes read as zeros), never whole.
    The real CDN's ETag is its own (not the sha256); here it is the listed
    sha256, so a client may compare either.
Behaviours (meta "behaviour"):
    cut        the first GET of each file whose answer runs from byte 0 to
               the end (no Range, bytes=0-, or a failed If-Range) sends half
               the body and closes the connection; later requests are
               served whole (per server process).
    norange    Range and If-Range are ignored: always 200, the whole file.
    baddigest  nothing here: hfgen lists a wrong sha256, so ETag and
               X-Linked-Etag disagree with the bytes.
    anyresolve a resolve of any path of the repo (or any hub URL ending
               with its hostile file's name, as a client that normalises
               "../" asks) answers as its .gguf's resolve.
    linkcdn    the tree's Link rel="next" points to the CDN's origin; the
               CDN answers /api/models/... as the hub does.
    weaketag   the CDN's ETag is W/"sha256"; an If-Range never matches it.
    upperdigest nothing here: hfgen writes the sha256 in upper case.
    startotal  a 206's Content-Range says "bytes A-B/*" (a total the server
               does not know; RFC 9110 allows it).
    norangehdr a 206 without any Content-Range.
Hostile listing entries (org evil): "file" in an oids entry is where the
bytes are when the listed path is no disk path (it may hold "../" or
control characters); "list_size" the size listed instead of the real one.

--log FILE: one JSON line per request, flushed: {"server": "hub"|"cdn",
"method", "path" (with the query), "range", "if_range", "auth": bool,
"status", "bytes": body bytes sent}, and "cut": true / "error" when so.
"""

import argparse
import base64
import email.utils
import hashlib
import hmac
import json
import os
import signal
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, quote, unquote, urlencode, urlsplit

TOKEN = "hf_fake_token_123"
PAGE = 8  # tree entries per page
LIST_CAP = 1000
CHUNK = 1 << 20
SIG_KEY = b"fakehf-cdn-signing-key"
LAST_MODIFIED = email.utils.formatdate(1717243200, usegmt=True)  # 2024-06-01T12:00:00Z


class Repo:
    def __init__(self, rid, rdir, meta):
        self.rid, self.dir, self.meta = rid, rdir, meta
        self.org, self.name = rid.split("/", 1)
        self.sha = meta.get("sha") or hashlib.sha1(rid.encode()).hexdigest()
        self.files = {}  # path -> oid entry (+ "size" from disk)
        for rel, e in meta.get("oids", {}).items():
            p = os.path.join(rdir, e.get("file", rel))  # "file": a hostile path's bytes
            if os.path.isfile(p):
                e = dict(e)
                e["size"] = os.path.getsize(p)
                e.setdefault("file", rel)
                e.setdefault("list_size", e["size"])
                e.setdefault("lfs", rel.endswith(".gguf"))
                self.files[rel] = e
        self.by_file = {e["file"]: rel for rel, e in self.files.items()}
        self.dirs = set()
        for rel in self.files:
            if self.files[rel]["file"] != rel:
                continue  # a hostile path: listed as it is, no folders
            parts = rel.split("/")[:-1]
            for i in range(1, len(parts) + 1):
                self.dirs.add("/".join(parts[:i]))
        self.id24 = hashlib.sha1(b"_id:" + rid.encode()).hexdigest()[:24]

    @property
    def behaviour(self):
        return self.meta.get("behaviour", "normal")

    @property
    def gated(self):
        return bool(self.meta.get("gated"))

    def summary(self):
        m = self.meta
        return {"_id": self.id24, "id": self.rid, "modelId": self.rid, "author": m.get("author", self.org),
                "downloads": m.get("downloads", 0), "likes": m.get("likes", 0),
                "tags": list(m.get("tags", [])), "pipeline_tag": m.get("pipeline_tag", "text-generation"),
                "private": False, "gated": "auto" if self.gated else False,
                "lastModified": m.get("lastModified", "2024-06-01T12:00:00.000Z"),
                "createdAt": m.get("createdAt", "2024-06-01T12:00:00.000Z"),
                "library_name": m.get("library_name", "gguf")}

    def dir_oid(self, d):
        h = hashlib.sha1(b"tree:" + self.rid.encode() + b":" + d.encode())
        for rel in sorted(self.files):
            if rel.startswith(d + "/"):
                h.update(self.files[rel]["git"].encode())
        return h.hexdigest()


def load_repos(root):
    repos = {}
    for org in sorted(os.listdir(root)):
        od = os.path.join(root, org)
        if not os.path.isdir(od) or org.startswith("."):
            continue
        for name in sorted(os.listdir(od)):
            mp = os.path.join(od, name, ".meta.json")
            if os.path.isfile(mp):
                with open(mp) as f:
                    repos[f"{org}/{name}"] = Repo(f"{org}/{name}", os.path.join(od, name), json.load(f))
    return repos


def sign(path):
    return hmac.new(SIG_KEY, path.encode(), hashlib.sha256).hexdigest()[:32]


class State:
    def __init__(self, args):
        self.root = args.root
        self.repos = load_repos(args.root)
        self.verbose = args.verbose
        self.hub_base = self.cdn_base = ""
        self.cut_done = set()
        self.lock = threading.Lock()
        self.log = open(args.log, "a", buffering=1) if args.log else None
        self.log_lock = threading.Lock()

    def write_log(self, rec):
        line = json.dumps(rec, sort_keys=False)
        if self.log:
            with self.log_lock:
                self.log.write(line + "\n")
                self.log.flush()
        if self.verbose:
            sys.stderr.write(line + "\n")

    def take_cut(self, key):
        with self.lock:
            if key in self.cut_done:
                return False
            self.cut_done.add(key)
            return True


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 300  # an idle keep-alive connection is closed after this

    def version_string(self):
        return "fakehf/1"
    which = "hub"
    st: State = None

    # ------------------------------------------------------------ plumbing

    def log_message(self, fmt, *args):  # quiet: the JSON log is the record
        pass

    def send_response(self, code, message=None):
        self._status = code
        super().send_response(code, message)

    def _begin(self):
        self._status = None
        self._sent = 0
        self._extra = {}
        u = urlsplit(self.path)
        self.upath = u.path
        self.query = parse_qs(u.query, keep_blank_values=True)

    def _finish_log(self):
        rec = {"server": self.which, "method": self.command, "path": self.path,
               "range": self.headers.get("Range"), "if_range": self.headers.get("If-Range"),
               "auth": "Authorization" in self.headers, "status": self._status, "bytes": self._sent}
        rec.update(self._extra)
        self.st.write_log(rec)

    def _dispatch(self):
        self._begin()
        try:
            if self.which == "hub":
                self.hub()
            else:
                self.cdn()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, socket.timeout):
            self._extra["error"] = "client went away"
            self.close_connection = True
        finally:
            self._finish_log()

    do_GET = _dispatch
    do_HEAD = _dispatch

    def _body(self, data):
        if self.command != "HEAD":
            self.wfile.write(data)
            self._sent += len(data)

    def reply(self, code, body=b"", ctype="application/json; charset=utf-8", headers=()):
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        elif isinstance(body, str):
            body = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self._body(body)

    def error(self, code, msg, xcode=None, headers=()):
        h = list(headers)
        if xcode:
            h.append(("X-Error-Code", xcode))
        h.append(("X-Error-Message", msg))
        self.reply(code, {"error": msg}, headers=h)

    def token(self):
        a = self.headers.get("Authorization")
        if a is None:
            return None
        return a[7:].strip() if a.startswith("Bearer ") else a

    # ------------------------------------------------------------------ hub

    def hub(self):
        parts = self.upath.split("/")[1:]  # raw segments: an encoded %2F stays inside one
        if parts[:2] == ["api", "models"]:
            if len(parts) == 2 or (len(parts) == 3 and parts[2] == ""):
                return self.list_models()
            if len(parts) < 4:
                return self.error(404, "Repository not found", "RepoNotFound")
            repo = self.find_repo(parts[2], parts[3])
            if repo is None:
                return
            rest = parts[4:]
            if not rest or rest == [""]:
                return self.model_info(repo, "main")
            if rest[0] == "revision" and len(rest) >= 2:
                return self.model_info(repo, unquote("/".join(rest[1:])))
            if rest[0] == "tree" and len(rest) >= 2:
                return self.tree(repo, unquote(rest[1]), unquote("/".join(rest[2:])))
            return self.error(404, "Not Found")
        if len(parts) >= 5 and parts[2] == "resolve":
            repo = self.find_repo(parts[0], parts[1])
            if repo is None:
                return
            return self.resolve(repo, unquote(parts[3]), unquote("/".join(parts[4:])))
        for repo in self.st.repos.values():  # a hostile path a client's URL parser normalised
            if repo.behaviour == "anyresolve" and any(
                    self.upath.endswith("/" + quote(os.path.basename(rel))) for rel in repo.files):
                return self.resolve(repo, "main", "")
        return self.error(404, "Not Found")

    def find_repo(self, org, name):
        repo = self.st.repos.get(f"{unquote(org)}/{unquote(name)}")
        if repo is None:
            self.error(404, "Repository not found", "RepoNotFound")
            return None
        if repo.gated:
            tok = self.token()
            if tok is None:
                self.error(401, f"Access to model {repo.rid} is restricted. You must have access to it "
                           "and be authenticated to access it. Please log in.", "GatedRepo")
                return None
            if tok != TOKEN:
                self.error(403, f"Access to model {repo.rid} is restricted and you are not in the "
                           f"authorized list. Visit {self.st.hub_base}/{repo.rid} to ask for access.",
                           "GatedRepo")
                return None
        return repo

    def check_rev(self, repo, rev):
        if rev in ("main", repo.sha):
            return True
        self.error(404, "Revision not found", "RevisionNotFound")
        return False

    def list_models(self):
        q = self.query
        lim = q.get("limit", [str(LIST_CAP)])[-1]
        try:
            limit = int(lim)
            if limit < 1:
                raise ValueError
        except ValueError:
            return self.error(400, f"Invalid limit '{lim}': a positive integer is expected")
        limit = min(limit, LIST_CAP)
        search = q.get("search", [""])[-1].lower()
        author = q.get("author", [""])[-1]
        ptag = q.get("pipeline_tag", [""])[-1]
        filters = [f for v in q.get("filter", []) for f in v.split(",") if f]
        sort = q.get("sort", ["downloads"])[-1] or "downloads"
        if sort not in ("downloads", "likes", "lastModified", "createdAt", "id", "trendingScore"):
            return self.error(400, f"Invalid sort '{sort}'")
        direction = q.get("direction", ["-1"])[-1]
        if direction not in ("-1", "1"):
            return self.error(400, f"Invalid direction '{direction}'")
        out = []
        for r in self.st.repos.values():
            s = r.summary()
            if search and search not in r.rid.lower():
                continue
            if author and s["author"] != author:
                continue
            if ptag and s["pipeline_tag"] != ptag:
                continue
            if any(f not in s["tags"] and f != s["library_name"] for f in filters):
                continue
            out.append(s)
        key = "downloads" if sort == "trendingScore" else sort
        out.sort(key=lambda s: s["id"])
        out.sort(key=lambda s: s[key], reverse=(direction == "-1"))
        self.reply(200, out[:limit])

    def model_info(self, repo, rev):
        if not self.check_rev(repo, rev):
            return
        blobs = self.query.get("blobs", ["false"])[-1].lower() in ("1", "true")
        d = repo.summary()
        sib = []
        for rel in sorted(repo.files):
            e = repo.files[rel]
            s = {"rfilename": rel}
            if blobs:
                s["size"] = e["list_size"]
                s["blobId"] = e["git"]
                if e["lfs"]:
                    s["lfs"] = {"sha256": e["sha256"], "size": e["list_size"],
                                "pointerSize": e["pointerSize"]}
            sib.append(s)
        m = repo.meta
        d.update({"sha": repo.sha, "disabled": False, "siblings": sib,
                  "cardData": m.get("card") or {"tags": ["gguf"]},
                  "usedStorage": sum(e["size"] for e in repo.files.values()),
                  "spaces": []})
        if m.get("config") is not None:
            d["config"] = m["config"]
        if m.get("gguf"):
            d["gguf"] = m["gguf"]
        self.reply(200, d, headers=[("X-Repo-Commit", repo.sha)])

    def tree(self, repo, rev, path):
        if not self.check_rev(repo, rev):
            return
        path = path.strip("/")
        if path and path not in repo.dirs:
            return self.error(404, f"{path} does not exist on \"{rev}\"", "EntryNotFound")
        rec = self.query.get("recursive", ["false"])[-1].lower() in ("1", "true")
        prefix = path + "/" if path else ""
        entries = []
        for d in sorted(repo.dirs):
            if d.startswith(prefix) and (rec or "/" not in d[len(prefix):]):
                entries.append({"type": "directory", "oid": repo.dir_oid(d), "size": 0, "path": d})
        for rel in sorted(repo.files):
            if rel.startswith(prefix) and (rec or "/" not in rel[len(prefix):]):
                e = repo.files[rel]
                ent = {"type": "file", "oid": e["git"], "size": e["list_size"], "path": rel}
                if e["lfs"]:
                    ent["lfs"] = {"oid": e["sha256"], "size": e["list_size"],
                                  "pointerSize": e["pointerSize"]}
                entries.append(ent)
        entries.sort(key=lambda e: e["path"])
        cur = self.query.get("cursor", [""])[-1]
        start = 0
        if cur:
            try:
                start = int(json.loads(base64.urlsafe_b64decode(cur + "=" * (-len(cur) % 4)))["o"])
                if not 0 <= start <= len(entries):
                    raise ValueError
            except (ValueError, KeyError, TypeError, json.JSONDecodeError):
                return self.error(400, "Invalid cursor")
        page = entries[start:start + PAGE]
        headers = []
        if start + PAGE < len(entries):
            nxt = base64.urlsafe_b64encode(json.dumps({"o": start + PAGE}).encode()).decode().rstrip("=")
            q = [(k, v) for k, vs in self.query.items() if k != "cursor" for v in vs]
            q.append(("cursor", nxt))
            base = self.st.cdn_base if repo.behaviour == "linkcdn" else self.st.hub_base
            headers.append(("Link", f"<{base}{self.upath}?{urlencode(q)}>; rel=\"next\""))
        self.reply(200, page, headers=headers)

    def resolve(self, repo, rev, path):
        if not self.check_rev(repo, rev):
            return
        e = repo.files.get(path)
        if e is None and repo.behaviour == "anyresolve":
            path = next(iter(sorted(repo.files, key=lambda p: not repo.files[p]["lfs"])))
            e = repo.files[path]
        if e is None:
            return self.error(404, "Entry not found", "EntryNotFound", headers=[("X-Repo-Commit", repo.sha)])
        if e["lfs"]:
            cdn_path = f"/cdn/{quote(repo.org)}/{quote(repo.name)}/{quote(e['file'])}"
            loc = f"{self.st.cdn_base}{cdn_path}?sig={sign(cdn_path)}"
            body = f"Found. Redirecting to {loc}"
            return self.reply(302, body, ctype="text/plain; charset=utf-8", headers=[
                ("Location", loc), ("X-Linked-Size", str(int(e["list_size"]))),
                ("X-Linked-Etag", f"\"{e['sha256']}\""), ("X-Repo-Commit", repo.sha),
                ("ETag", f"\"{e['git']}\""), ("Accept-Ranges", "bytes"),
                ("Access-Control-Expose-Headers", "X-Repo-Commit,X-Linked-Size,X-Linked-Etag,ETag,Location")])
        self.send_file(repo, path, e, etag=f"\"{e['git']}\"", extra=[("X-Repo-Commit", repo.sha)],
                       ctype="text/plain; charset=utf-8", behaviour="normal")

    # ------------------------------------------------------------------ cdn

    def cdn(self):
        if "Authorization" in self.headers:
            self._extra["error"] = "token forwarded to the CDN"
            sys.stderr.write(f"fakehf: token forwarded to the CDN: {self.command} {self.path}\n")
            return self.error(400, "token forwarded to the CDN")
        parts = self.upath.split("/")[1:]
        if parts[:2] == ["api", "models"]:  # a page the hub's Link sent here (linkcdn)
            return self.hub()
        if len(parts) < 4 or parts[0] != "cdn":
            return self.error(404, "Not Found")
        sig = self.query.get("sig", [""])[-1]
        if not hmac.compare_digest(sig, sign(self.upath)):
            return self.error(403, "Access denied: missing or bad signature")
        repo = self.st.repos.get(f"{unquote(parts[1])}/{unquote(parts[2])}")
        path = unquote("/".join(parts[3:]))
        path = repo.by_file.get(path) if repo else None
        e = repo.files.get(path) if path else None
        if e is None:
            return self.error(404, "Not Found")
        etag = f"\"{e['sha256']}\""
        if repo.behaviour == "weaketag":
            etag = "W/" + etag
        self.send_file(repo, path, e, etag=etag, extra=[],
                       ctype="application/octet-stream", behaviour=repo.meta.get("behaviour", "normal"))

    # ---------------------------------------------------------- file bytes

    def parse_range(self, total):
        """None: the whole file; (a, b) inclusive; "416" unsatisfiable."""
        h = self.headers.get("Range")
        if not h:
            return None
        h = h.strip()
        if not h.startswith("bytes=") or "," in h:
            return None  # not a single byte range: ignored (RFC 9110 14.2)
        spec = h[6:].strip()
        a, sep, b = spec.partition("-")
        try:
            if not sep:
                return None
            if a == "":
                n = int(b)
                if n <= 0:
                    return "416"
                return (max(0, total - n), total - 1)
            a = int(a)
            b = int(b) if b != "" else None
        except ValueError:
            return None
        if a < 0 or (b is not None and b < a):
            return None  # invalid: ignored
        if a >= total:
            return "416"
        return (a, total - 1 if b is None else min(b, total - 1))

    def send_file(self, repo, path, e, etag, extra, ctype, behaviour):
        fp = os.path.join(repo.dir, e["file"])
        total = os.path.getsize(fp)
        rng = None
        if behaviour != "norange":
            rng = self.parse_range(total)
            ir = self.headers.get("If-Range")
            strong = () if etag.startswith("W/") else (etag,)  # If-Range compares strongly
            if rng is not None and ir is not None and ir.strip() not in strong + (LAST_MODIFIED,):
                rng = None  # the validator does not match: the whole file
        common = [("ETag", etag), ("Accept-Ranges", "bytes"), ("Last-Modified", LAST_MODIFIED)] + extra
        if rng == "416":
            return self.reply(416, {"error": "Requested range not satisfiable"},
                              headers=common + [("Content-Range", f"bytes */{total}")])
        a, b = rng if rng else (0, total - 1)
        n = b - a + 1 if total else 0
        self.send_response(206 if rng else 200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(n))
        if rng and behaviour == "startotal":
            self.send_header("Content-Range", f"bytes {a}-{b}/*")
        elif rng and behaviour != "norangehdr":
            self.send_header("Content-Range", f"bytes {a}-{b}/{total}")
        for k, v in common:
            self.send_header(k, v)
        self.end_headers()
        if self.command == "HEAD" or n == 0:
            return
        stop = n
        if (behaviour == "cut" and a == 0 and n == total and self.which == "cdn"
                and self.st.take_cut((repo.rid, path))):
            stop = n // 2
            self._extra["cut"] = True
        fd = os.open(fp, os.O_RDONLY)
        try:
            off, left = a, stop
            while left > 0:
                chunk = os.pread(fd, min(CHUNK, left), off)
                if not chunk:  # the file shrank: pad with zeros to keep the length promised
                    chunk = b"\0" * min(CHUNK, left)
                self.wfile.write(chunk)
                self._sent += len(chunk)
                off += len(chunk)
                left -= len(chunk)
        finally:
            os.close(fd)
        if stop < n:
            self.wfile.flush()
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def handle_error(self, request, client_address):  # quiet, unless -v
        if Handler.st and Handler.st.verbose:
            super().handle_error(request, client_address)


def main():
    ap = argparse.ArgumentParser(description="A fake Hugging Face Hub and CDN on loopback.")
    ap.add_argument("--root", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log")
    ap.add_argument("--hub-addr", default="127.0.0.1")
    ap.add_argument("--cdn-addr", default="127.0.0.2")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    if not os.path.isdir(args.root):
        sys.exit(f"fakehf: {args.root}: not a directory")
    st = State(args)
    if not st.repos:
        sys.exit(f"fakehf: {args.root}: no repositories (run tests/fakes/hfgen.py first)")

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())

    HubH = type("HubHandler", (Handler,), {"which": "hub", "st": st})
    CdnH = type("CdnHandler", (Handler,), {"which": "cdn", "st": st})
    Handler.st = st
    try:
        hub = Server((args.hub_addr, 0), HubH)
        cdn = Server((args.cdn_addr, 0), CdnH)
    except OSError as e:
        sys.exit(f"fakehf: cannot listen: {e}")
    hp, cp = hub.server_address[1], cdn.server_address[1]
    st.hub_base = f"http://{args.hub_addr}:{hp}"
    st.cdn_base = f"http://{args.cdn_addr}:{cp}"
    threads = [threading.Thread(target=s.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
               for s in (hub, cdn)]
    for t in threads:
        t.start()
    tmp = f"{args.port_file}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(f"{hp} {cp}\n")
    os.replace(tmp, args.port_file)
    if args.verbose:
        sys.stderr.write(f"fakehf: hub {st.hub_base}, cdn {st.cdn_base}, {len(st.repos)} repositories\n")
    while not stop.wait(0.5):
        pass
    for s in (hub, cdn):
        s.shutdown()
        s.server_close()
    if st.log:
        st.log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
