#!/usr/bin/env python3
"""hfgen.py - build the repository tree that tests/fakes/fakehf.py serves.

    python3 tests/fakes/hfgen.py ROOT [--models DIR] [--bench] [--check] [-v]

Writes ROOT/<org>/<repo>/<files> and ROOT/<org>/<repo>/.meta.json for every
repository of the fake Hugging Face Hub (see tests/fakes/README.md).  Python
3.11 standard library only; deterministic (fixed seeds, fixed dates); prints
nothing on success unless -v.

--models DIR  the two tiny real GGUF files (default: tests/fixtures/models,
              relative to the repository root two folders above this file)
--bench       also build synth/Model-7B-GGUF: 20 quantisations of a 7B model
--check       re-read every synthetic header with the reader below (slower)

.meta.json:
    {"gated": bool, "behaviour": "normal"|"cut"|"norange"|"baddigest"|"anyresolve"|
     "linkcdn"|"weaketag"|"upperdigest"|"startotal"|"norangehdr",
     "tags": [...], "pipeline_tag": "text-generation", "author": org,
     "downloads": N, "likes": N, "config": {config.json} or null,
     "sha": repo commit (40 hex), "createdAt", "lastModified",
     "library_name": "gguf", "gguf": {"architecture", "context_length",
     "total"} or null, "card": {cardData},
     "oids": {path: {"sha256": hex, "git": hex, "size": N, "lfs": bool,
                     "pointerSize": N (lfs only), "verifiable": bool,
                     "content_git": hex or null, "real_sha256": hex (baddigest only),
                     "file": the bytes' path when the listed path is hostile (not a disk path),
                     "list_size": the size listed instead of the real one}}}

"git" is what the Hub lists as a file's oid (blob id): for a plain file the
git blob sha1 of its content ("blob %d\\0" + content), for an LFS file
(*.gguf) the git blob sha1 of its LFS POINTER file, as on the real Hub
(huggingface_hub's list_repo_tree docstring lists pytorch_model.bin with
blob_id 64eaa9c5..., which is the sha1 of its 134-byte pointer; and
utils/_verification.py checks LFS files by lfs.sha256, others by the git
sha1).  "content_git" is the git blob sha1 of the content itself.

Synthetic repos (synth/*) hold SPARSE files: the real header, then a hole up
to the size the tensor table implies (a "40 GB" file costs a few MB of
disk).  Their content sha256 cannot be computed cheaply, so "sha256" is the
sha256 of the header bytes (up to the data section) and "verifiable" is
false: a pull of a synth file cannot be checked against its digest.
"""

import argparse
import hashlib
import io
import json
import os
import random
import shutil
import struct
import sys
import time

# ---------------------------------------------------------------- GGUF ----

GGUF_MAGIC = b"GGUF"
T_U8, T_I8, T_U16, T_I16, T_U32, T_I32, T_F32, T_BOOL, T_STR, T_ARR, T_U64, T_I64, T_F64 = range(13)
_SCALAR = {T_U8: "B", T_I8: "b", T_U16: "H", T_I16: "h", T_U32: "I", T_I32: "i",
           T_F32: "f", T_BOOL: "?", T_U64: "Q", T_I64: "q", T_F64: "d"}

# ggml type id -> (name, elements per block, bytes per block); ggml-common.h
GGML_TYPES = {
    0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20),
    6: ("Q5_0", 32, 22), 7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 9: ("Q8_1", 32, 36),
    10: ("Q2_K", 256, 84), 11: ("Q3_K", 256, 110), 12: ("Q4_K", 256, 144),
    13: ("Q5_K", 256, 176), 14: ("Q6_K", 256, 210), 15: ("Q8_K", 256, 292),
    16: ("IQ2_XXS", 256, 66), 17: ("IQ2_XS", 256, 74), 18: ("IQ3_XXS", 256, 98),
    19: ("IQ1_S", 256, 50), 20: ("IQ4_NL", 32, 18), 21: ("IQ3_S", 256, 110),
    22: ("IQ2_S", 256, 82), 23: ("IQ4_XS", 256, 136), 24: ("I8", 1, 1),
    25: ("I16", 1, 2), 26: ("I32", 1, 4), 27: ("I64", 1, 8), 28: ("F64", 1, 8),
    29: ("IQ1_M", 256, 56), 30: ("BF16", 1, 2),
}
GT = {v[0]: k for k, v in GGML_TYPES.items()}  # "Q4_K" -> 12


def tensor_nbytes(ne, gtype):
    _, blck, size = GGML_TYPES[gtype]
    if ne[0] % blck:
        raise ValueError(f"ne0 {ne[0]} is not a multiple of {GGML_TYPES[gtype][0]}'s block {blck}")
    n = 1
    for d in ne:
        n *= d
    return n // blck * size


def align_up(n, a):
    return (n + a - 1) // a * a


class Tensor:
    __slots__ = ("name", "ne", "type", "offset")

    def __init__(self, name, ne, gtype, offset=0):
        self.name, self.ne, self.type, self.offset = name, list(ne), gtype, offset

    @property
    def nbytes(self):
        return tensor_nbytes(self.ne, self.type)


class GGUF:
    """A parsed header: kv is a list of (key, type, value) with arrays as
    (elem_type, list); tensors in table order; data_offset absolute."""

    def __init__(self):
        self.version = 3
        self.kv = []
        self.tensors = []
        self.alignment = 32
        self.data_offset = 0

    def get(self, key, default=None):
        for k, _, v in self.kv:
            if k == key:
                return v
        return default


def _rd(f, n):
    b = f.read(n)
    if len(b) != n:
        raise ValueError("truncated GGUF")
    return b


def _rd_str(f):
    (n,) = struct.unpack("<Q", _rd(f, 8))
    return _rd(f, n).decode("utf-8", "surrogateescape")


def _rd_val(f, t):
    if t == T_STR:
        return _rd_str(f)
    if t == T_ARR:
        et, n = struct.unpack("<IQ", _rd(f, 12))
        if et == T_STR:
            return (et, [_rd_str(f) for _ in range(n)])
        if et == T_ARR:
            raise ValueError("nested arrays are not supported")
        fmt = _SCALAR[et]
        return (et, list(struct.unpack(f"<{n}{fmt}", _rd(f, n * struct.calcsize(fmt)))))
    fmt = _SCALAR[t]
    return struct.unpack("<" + fmt, _rd(f, struct.calcsize(fmt)))[0]


def read_gguf(src):
    """src: a path or a binary file object positioned at the magic."""
    f = open(src, "rb", buffering=1 << 20) if isinstance(src, (str, os.PathLike)) else src
    try:
        if _rd(f, 4) != GGUF_MAGIC:
            raise ValueError("not a GGUF file")
        g = GGUF()
        g.version, nt, nk = struct.unpack("<IQQ", _rd(f, 20))
        if g.version != 3:
            raise ValueError(f"GGUF version {g.version}, only 3 is handled")
        for _ in range(nk):
            k = _rd_str(f)
            (t,) = struct.unpack("<I", _rd(f, 4))
            g.kv.append((k, t, _rd_val(f, t)))
        g.alignment = int(g.get("general.alignment", 32))
        for _ in range(nt):
            name = _rd_str(f)
            (nd,) = struct.unpack("<I", _rd(f, 4))
            ne = struct.unpack(f"<{nd}Q", _rd(f, 8 * nd))
            gtype, off = struct.unpack("<IQ", _rd(f, 12))
            g.tensors.append(Tensor(name, ne, gtype, off))
        g.data_offset = align_up(f.tell(), g.alignment) if nt else f.tell()
        return g
    finally:
        if f is not src:
            f.close()


def _str_b(s):
    b = s.encode("utf-8", "surrogateescape") if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def kv_bytes(key, t, v):
    out = [_str_b(key), struct.pack("<I", t)]
    if t == T_STR:
        out.append(_str_b(v))
    elif t == T_ARR:
        et, items = v
        out.append(struct.pack("<IQ", et, len(items)))
        if et == T_STR:
            out.append(b"".join(_str_b(s) for s in items))
        else:
            out.append(struct.pack(f"<{len(items)}{_SCALAR[et]}", *items))
    else:
        out.append(struct.pack("<" + _SCALAR[t], v))
    return b"".join(out)


def header_bytes(kv_blocks, n_kv, tensors, alignment):
    """kv_blocks: serialized kv pairs (bytes, any grouping), n_kv their count.
    Assigns contiguous aligned offsets to tensors; returns (header incl.
    padding, total data bytes incl. each tensor's padding)."""
    off = 0
    for t in tensors:
        t.offset = off
        off += align_up(t.nbytes, alignment)
    parts = [GGUF_MAGIC, struct.pack("<IQQ", 3, len(tensors), n_kv)]
    parts.extend(kv_blocks)
    for t in tensors:
        parts.append(_str_b(t.name))
        parts.append(struct.pack(f"<I{len(t.ne)}QIQ", len(t.ne), *t.ne, t.type, t.offset))
    h = b"".join(parts)
    h += b"\0" * (align_up(len(h), alignment) - len(h))
    return h, off


def write_gguf(path, kv, tensors, data_src=None, alignment=32, sparse=False, prefix_blocks=()):
    """kv: list of (key, type, value); prefix_blocks: extra pre-serialized
    (bytes, count) blocks appended after kv.  data_src: (file, data_offset)
    to copy each tensor's bytes from (tensor.src_offset = its offset in the
    source), or sparse=True to leave the data a hole.  Returns the header."""
    blocks = [kv_bytes(*e) for e in kv] + [b for b, _ in prefix_blocks]
    n_kv = len(kv) + sum(n for _, n in prefix_blocks)
    src_offsets = [t.offset for t in tensors]
    h, total = header_bytes(blocks, n_kv, tensors, alignment)
    with open(path, "wb") as f:
        f.write(h)
        if sparse:
            f.truncate(len(h) + total)
        else:
            sf, sdo = data_src
            for t, so in zip(tensors, src_offsets):
                n = t.nbytes
                sf.seek(sdo + so)
                b = sf.read(n)
                if len(b) != n:
                    raise ValueError(f"source truncated at tensor {t.name}")
                f.write(b + b"\0" * (align_up(n, alignment) - n))
    return h


# --------------------------------------------------------- tokenizer ----

N_REGULAR = 151643  # Qwen2's regular tokens; specials and padding follow
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>",
            "<|object_ref_end|>", "<|box_start|>", "<|box_end|>", "<|quad_start|>",
            "<|quad_end|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
            "<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>",
            "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
            "<|repo_name|>", "<|file_sep|>"]
CHAT_TEMPLATE = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
                 "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}"
                 "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")
N_MERGES = 150000
_tok_base = None
_tok_blocks = {}


def _base_vocab():
    """151643 unique printable strings of 1-12 chars (no blanks: a merge is
    "a b"), and 150000 merges; generated once (seed 20240601)."""
    global _tok_base
    if _tok_base is None:
        rng = random.Random(20240601)
        alpha = [chr(c) for c in range(33, 127)]
        lengths = list(range(1, 13))
        weights = [2, 6, 10, 12, 12, 11, 10, 9, 8, 7, 6, 5]
        seen, toks = set(), []
        while len(toks) < N_REGULAR:
            (n,) = rng.choices(lengths, weights)
            s = "".join(rng.choices(alpha, k=n))
            if s not in seen:
                seen.add(s)
                toks.append(s)
        merges, mseen = [], set()
        while len(merges) < N_MERGES:
            a, b = rng.randrange(N_REGULAR), rng.randrange(N_REGULAR)
            if (a, b) not in mseen:
                mseen.add((a, b))
                merges.append(f"{toks[a]} {toks[b]}")
        _tok_base = (toks, merges)
    return _tok_base


def tokenizer_block(n_vocab):
    """The tokenizer's kv pairs for a vocabulary of n_vocab, serialized once
    per size: (bytes, number of kv pairs)."""
    if n_vocab not in _tok_blocks:
        toks, merges = _base_vocab()
        tokens = toks + SPECIALS
        tokens += [f"[PAD{i}]" for i in range(len(tokens), n_vocab)]
        tokens = tokens[:n_vocab]
        ttype = [1] * N_REGULAR + [3] * (len(tokens) - N_REGULAR)
        eos = N_REGULAR  # <|endoftext|>, as Qwen2
        kv = [
            ("tokenizer.ggml.model", T_STR, "gpt2"),
            ("tokenizer.ggml.pre", T_STR, "qwen2"),
            ("tokenizer.ggml.tokens", T_ARR, (T_STR, tokens)),
            ("tokenizer.ggml.token_type", T_ARR, (T_I32, ttype)),
            ("tokenizer.ggml.merges", T_ARR, (T_STR, merges)),
            ("tokenizer.ggml.eos_token_id", T_U32, eos),
            ("tokenizer.ggml.padding_token_id", T_U32, eos),
            ("tokenizer.ggml.bos_token_id", T_U32, eos),
            ("tokenizer.ggml.add_bos_token", T_BOOL, False),
            ("tokenizer.chat_template", T_STR, CHAT_TEMPLATE),
        ]
        _tok_blocks[n_vocab] = (b"".join(kv_bytes(*e) for e in kv), len(kv))
    return _tok_blocks[n_vocab]


# -------------------------------------------------- synthetic models ----

# llama.cpp's fallback when a row is not a whole number of 256-blocks
# (llama-quant.cpp, llama_tensor_get_type): Q6_K -> Q8_0, Q4_K -> Q5_0, ...
FALLBACK = {"Q2_K": "Q4_0", "Q3_K": "Q4_0", "Q4_K": "Q5_0", "Q5_K": "Q5_1", "Q6_K": "Q8_0",
            "IQ2_XS": "Q4_0", "IQ3_XXS": "Q4_0", "IQ4_XS": "IQ4_NL"}


def gtype_for(name, ne0):
    if ne0 % GGML_TYPES[GT[name]][1]:
        name = FALLBACK[name]
    return GT[name]


def use_more_bits(i, n):  # llama-quant.cpp
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def synth_model(path, arch, hp, n_vocab, ftype, name, tensor_type):
    """hp: the arch's hyperparameters; tensor_type(kind, layer, ne0) -> ggml type
    name for weights.  Writes a sparse file; returns (header bytes, size, n_params)."""
    L, E = hp["block_count"], hp["embedding_length"]
    H, HKV = hp["attention.head_count"], hp["attention.head_count_kv"]
    kd = hp.get("attention.key_length", E // H)
    vd = hp.get("attention.value_length", E // H)
    moe = "expert_count" in hp
    F32 = GT["F32"]

    def w(kind, ne, layer=-1):
        return Tensor(kind_name(kind, layer), ne, gtype_for(tensor_type(kind, layer), ne[0]))

    def kind_name(kind, layer):
        return kind if layer < 0 else f"blk.{layer}.{kind}"

    ts = [w("token_embd.weight", [E, n_vocab])]
    for i in range(L):
        ts.append(Tensor(f"blk.{i}.attn_norm.weight", [E], F32))
        ts.append(w("attn_q.weight", [E, H * kd], i))
        if arch == "qwen2":
            ts.append(Tensor(f"blk.{i}.attn_q.bias", [H * kd], F32))
        ts.append(w("attn_k.weight", [E, HKV * kd], i))
        if arch == "qwen2":
            ts.append(Tensor(f"blk.{i}.attn_k.bias", [HKV * kd], F32))
        ts.append(w("attn_v.weight", [E, HKV * vd], i))
        if arch == "qwen2":
            ts.append(Tensor(f"blk.{i}.attn_v.bias", [HKV * vd], F32))
        ts.append(w("attn_output.weight", [H * vd, E], i))
        if arch == "qwen3moe":
            ts.append(Tensor(f"blk.{i}.attn_q_norm.weight", [kd], F32))
            ts.append(Tensor(f"blk.{i}.attn_k_norm.weight", [kd], F32))
        ts.append(Tensor(f"blk.{i}.ffn_norm.weight", [E], F32))
        if moe:
            X, FE = hp["expert_count"], hp["expert_feed_forward_length"]
            ts.append(Tensor(f"blk.{i}.ffn_gate_inp.weight", [E, X], F32))
            ts.append(w("ffn_gate_exps.weight", [E, FE, X], i))
            ts.append(w("ffn_up_exps.weight", [E, FE, X], i))
            ts.append(w("ffn_down_exps.weight", [FE, E, X], i))
        else:
            FF = hp["feed_forward_length"]
            ts.append(w("ffn_gate.weight", [E, FF], i))
            ts.append(w("ffn_up.weight", [E, FF], i))
            ts.append(w("ffn_down.weight", [FF, E], i))
    ts.append(Tensor("output_norm.weight", [E], F32))
    ts.append(w("output.weight", [E, n_vocab]))

    kv = [("general.architecture", T_STR, arch),
          ("general.type", T_STR, "model"),
          ("general.name", T_STR, name),
          ("general.file_type", T_U32, ftype),
          ("general.quantization_version", T_U32, 2)]
    for k, v in hp.items():
        if isinstance(v, float):
            kv.append((f"{arch}.{k}", T_F32, v))
        else:
            kv.append((f"{arch}.{k}", T_U32, v))
    h = write_gguf(path, kv, ts, sparse=True, prefix_blocks=[tokenizer_block(n_vocab)])
    n_params = 0
    for t in ts:
        p = 1
        for d in t.ne:
            p *= d
        n_params += p
    return h, os.path.getsize(path), n_params


QWEN2_70B = {"block_count": 80, "context_length": 32768, "embedding_length": 8192,
             "feed_forward_length": 29568, "attention.head_count": 64,
             "attention.head_count_kv": 8, "rope.freq_base": 1000000.0,
             "attention.layer_norm_rms_epsilon": 1e-6}
QWEN3MOE_30B = {"block_count": 48, "context_length": 40960, "embedding_length": 2048,
                "feed_forward_length": 6144, "attention.head_count": 32,
                "attention.head_count_kv": 4, "attention.key_length": 128,
                "attention.value_length": 128, "rope.freq_base": 1000000.0,
                "attention.layer_norm_rms_epsilon": 1e-6, "expert_count": 128,
                "expert_used_count": 8, "expert_feed_forward_length": 768}
LLAMA_7B = {"block_count": 32, "context_length": 32768, "embedding_length": 4096,
            "feed_forward_length": 14336, "attention.head_count": 32,
            "attention.head_count_kv": 8, "rope.dimension_count": 128,
            "rope.freq_base": 1000000.0, "attention.layer_norm_rms_epsilon": 1e-5}
VOCAB_QWEN2, VOCAB_QWEN3 = 152064, 151936


def q4_k_m(kind, layer):
    if kind in ("attn_v.weight", "ffn_down.weight", "output.weight", "ffn_down_exps.weight"):
        return "Q6_K"
    return "Q4_K"


# quant -> (llama_ftype, main type, token_embd, output, {kind: type or fn(i, n)})
def _more(big, small):
    return lambda i, n: big if use_more_bits(i, n) else small


BENCH_QUANTS = {
    "Q2_K": (10, "Q2_K", "Q2_K", "Q6_K", {"attn_v.weight": "Q4_K", "ffn_down.weight": "Q3_K",
                                           "attn_output.weight": "Q3_K"}),
    "Q3_K_S": (11, "Q3_K", "Q3_K", "Q6_K", {}),
    "Q3_K_M": (12, "Q3_K", "Q3_K", "Q6_K", {"attn_v.weight": _more("Q5_K", "Q4_K"),
                                             "ffn_down.weight": _more("Q5_K", "Q4_K"),
                                             "attn_output.weight": "Q4_K"}),
    "Q3_K_L": (13, "Q3_K", "Q3_K", "Q6_K", {"attn_v.weight": "Q5_K", "ffn_down.weight": "Q5_K",
                                             "attn_output.weight": "Q5_K"}),
    "Q4_0": (2, "Q4_0", "Q4_0", "Q6_K", {}),
    "Q4_1": (3, "Q4_1", "Q4_1", "Q6_K", {}),
    "Q4_K_S": (14, "Q4_K", "Q4_K", "Q6_K", {"attn_v.weight": lambda i, n: "Q5_K" if i < 4 else "Q4_K",
                                             "ffn_down.weight": lambda i, n: "Q5_K" if i < n // 8 else "Q4_K"}),
    "Q4_K_M": (15, "Q4_K", "Q4_K", "Q6_K", {"attn_v.weight": _more("Q6_K", "Q4_K"),
                                             "ffn_down.weight": _more("Q6_K", "Q4_K")}),
    "Q5_0": (8, "Q5_0", "Q5_0", "Q6_K", {}),
    "Q5_1": (9, "Q5_1", "Q5_1", "Q6_K", {}),
    "Q5_K_S": (16, "Q5_K", "Q5_K", "Q6_K", {}),
    "Q5_K_M": (17, "Q5_K", "Q5_K", "Q6_K", {"attn_v.weight": _more("Q6_K", "Q5_K"),
                                             "ffn_down.weight": _more("Q6_K", "Q5_K")}),
    "Q6_K": (18, "Q6_K", "Q6_K", "Q6_K", {}),
    "Q8_0": (7, "Q8_0", "Q8_0", "Q8_0", {}),
    "F16": (1, "F16", "F16", "F16", {}),
    "BF16": (32, "BF16", "BF16", "BF16", {}),
    "F32": (0, "F32", "F32", "F32", {}),
    "IQ2_XS": (20, "IQ2_XS", "Q2_K", "Q5_K", {"attn_v.weight": "Q4_K", "ffn_down.weight": "Q2_K"}),
    "IQ3_XXS": (23, "IQ3_XXS", "Q3_K", "Q5_K", {"attn_v.weight": "Q4_K", "ffn_down.weight": "Q3_K"}),
    "IQ4_XS": (30, "IQ4_XS", "IQ4_XS", "Q6_K", {}),
}


def bench_type_fn(q, n_layer):
    _, main, embd, out, over = BENCH_QUANTS[q]

    def fn(kind, layer):
        if kind == "token_embd.weight":
            return embd
        if kind == "output.weight":
            return out
        o = over.get(kind)
        if o is None:
            return main
        return o(layer, n_layer) if callable(o) else o
    return fn


# ------------------------------------------------------------ repos ----

FIXED_DATE = "2024-06-01T12:00:00.000Z"


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def git_blob_sha1(path):
    h = hashlib.sha1(b"blob %d\0" % os.path.getsize(path))
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def lfs_pointer(sha256, size):
    return f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256}\nsize {size}\n".encode()


def git_sha1_bytes(b):
    return hashlib.sha1(b"blob %d\0" % len(b) + b).hexdigest()


class Repo:
    def __init__(self, root, rid, downloads, likes, gated=False, behaviour="normal", tags=()):
        self.rid = rid
        self.org, self.name = rid.split("/")
        self.dir = os.path.join(root, self.org, self.name)
        if os.path.isdir(self.dir):
            shutil.rmtree(self.dir)
        os.makedirs(self.dir)
        self.meta = {"gated": gated, "behaviour": behaviour, "tags": [], "pipeline_tag": "text-generation",
                     "author": self.org, "downloads": downloads, "likes": likes, "config": None,
                     "library_name": "gguf", "createdAt": FIXED_DATE, "lastModified": FIXED_DATE,
                     "gguf": None, "card": {"license": "mit", "tags": ["gguf"]}, "oids": {}}
        self.extra_tags = list(tags)

    def path(self, rel):
        p = os.path.join(self.dir, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        return p

    def add_real(self, rel, src=None, data=None):
        """A verbatim file: a copy of src (never a hard link: a test that
        damages a served file must not damage the fixture), or data."""
        p = self.path(rel)
        if data is not None:
            with open(p, "wb") as f:
                f.write(data)
        else:
            shutil.copyfile(src, p)
        self.note(rel, sha256_file(p), git_blob_sha1(p), verifiable=True)

    def add_listed(self, listed, disk, src, **extra):
        """A hostile listing entry: the path `listed` (which may climb out
        of the repository or hold control characters: never a disk path)
        served with the bytes of src, kept at `disk`; extra keys go to its
        oids entry ("list_size": the size the Hub lists)."""
        p = self.path(disk)
        shutil.copyfile(src, p)
        self.note(listed, sha256_file(p), git_blob_sha1(p), verifiable=True, disk=disk)
        self.meta["oids"][listed].update(extra)

    def note(self, rel, sha256, content_git, verifiable, disk=None):
        size = os.path.getsize(os.path.join(self.dir, disk or rel))
        e = {"sha256": sha256, "size": size, "lfs": rel.endswith(".gguf"),
             "verifiable": verifiable, "content_git": content_git}
        if disk and disk != rel:
            e["file"] = disk
        if e["lfs"]:
            ptr = lfs_pointer(sha256, size)
            e["git"] = git_sha1_bytes(ptr)
            e["pointerSize"] = len(ptr)
        else:
            e["git"] = content_git
        self.meta["oids"][rel] = e

    def add_synth(self, rel, header):
        self.note(rel, hashlib.sha256(header).hexdigest(), None, verifiable=False)

    def finish(self, arch=None, ctx=None, total=None, config=None, readme=None):
        if config is not None:
            self.meta["config"] = config
            self.add_real("config.json", data=(json.dumps(config, indent=2) + "\n").encode())
        if readme is None:
            readme = (f"---\nlicense: mit\ntags:\n- gguf\n{'- ' + arch + chr(10) if arch else ''}"
                      f"pipeline_tag: text-generation\n---\n\n# {self.rid}\n\n"
                      "A repository of the fake Hugging Face Hub (gpumod tests/fakes/hfgen.py).\n")
        self.add_real("README.md", data=readme.encode())
        tags = ["gguf"] + ([arch] if arch else []) + self.extra_tags + \
            ["text-generation", "license:mit", "endpoints_compatible", "region:us"]
        if self.meta["gated"]:
            self.meta["card"]["extra_gated_prompt"] = "You agree to not use the model to conduct experiments that cause harm."
        self.meta["tags"] = tags
        if arch:
            self.meta["gguf"] = {"architecture": arch, "context_length": ctx, "total": total}
        if self.meta["behaviour"] == "baddigest":
            for rel, e in self.meta["oids"].items():
                if e["lfs"]:
                    e["real_sha256"] = e["sha256"]
                    e["sha256"] = hashlib.sha256(b"baddigest:" + e["sha256"].encode()).hexdigest()
                    ptr = lfs_pointer(e["sha256"], e["size"])
                    e["git"] = git_sha1_bytes(ptr)
        if self.meta["behaviour"] == "upperdigest":
            for e in self.meta["oids"].values():
                if e["lfs"]:
                    e["sha256"] = e["sha256"].upper()
        h = hashlib.sha1(self.rid.encode())
        for rel in sorted(self.meta["oids"]):
            h.update(f"{rel}\0{self.meta['oids'][rel]['git']}\0".encode())
        self.meta["sha"] = h.hexdigest()
        with open(os.path.join(self.dir, ".meta.json"), "w") as f:
            json.dump(self.meta, f, indent=1, sort_keys=True)
            f.write("\n")


def n_params(g):
    total = 0
    for t in g.tensors:
        p = 1
        for d in t.ne:
            p *= d
        total += p
    return total


def split_gguf(src, out1, out2):
    """llama.cpp gguf-split layout, 2 shards: the split.* keys first (as
    gguf_split writes them), shard 1 the source's metadata too."""
    g = read_gguf(src)
    n = len(g.tensors)
    half = (n + 1) // 2
    parts = [g.tensors[:half], g.tensors[half:]]
    with open(src, "rb") as sf:
        for i, (out, ts) in enumerate(zip((out1, out2), parts)):
            kv = [("split.no", T_U16, i), ("split.count", T_U16, 2), ("split.tensors.count", T_I32, n)]
            if i == 0:
                kv += [e for e in g.kv if not e[0].startswith("split.")]
            ts = [Tensor(t.name, t.ne, t.type, t.offset) for t in ts]
            write_gguf(out, kv, ts, data_src=(sf, g.data_offset), alignment=g.alignment)
    # verify: re-read both shards
    s1, s2 = read_gguf(out1), read_gguf(out2)
    assert len(s1.tensors) + len(s2.tensors) == n, "split tensor counts do not add up"
    assert s1.get("split.tensors.count") == n and s2.get("split.no") == 1
    assert [t.name for t in s1.tensors + s2.tensors] == [t.name for t in g.tensors]
    for s, path in ((s1, out1), (s2, out2)):
        last = s.tensors[-1]
        assert os.path.getsize(path) == s.data_offset + align_up(last.offset + last.nbytes, s.alignment)
    # and the data moved intact
    with open(src, "rb") as sf:
        for s, path in ((s1, out1), (s2, out2)):
            with open(path, "rb") as f:
                for t in s.tensors:
                    o = next(x for x in g.tensors if x.name == t.name)
                    sf.seek(g.data_offset + o.offset)
                    f.seek(s.data_offset + t.offset)
                    assert sf.read(t.nbytes) == f.read(t.nbytes), f"tensor {t.name} differs"
    return g


def check_synth(path, header):
    g = read_gguf(io.BytesIO(header))
    last = g.tensors[-1]
    assert g.data_offset == len(header)
    assert os.path.getsize(path) == g.data_offset + align_up(last.offset + last.nbytes, g.alignment)
    with open(path, "rb") as f:
        assert f.read(len(header)) == header


EVIL_TRAVERSAL = "../../../../tmp/gpumod-evil/pwn.gguf"
EVIL_CTRL = "m\nargs: [\"--host\", \"0.0.0.0\"]\n#.gguf"


def build_evil(root, aid, tiny, info_a, info_t):
    """Hostile repositories (org evil) for the client's defences; see
    tests/fakes/README.md."""
    built = []
    r = Repo(root, "evil/traversal-GGUF", 10, 0, behaviour="anyresolve")
    r.add_listed(EVIL_TRAVERSAL, "pwn.gguf", aid)
    r.finish(*info_a)
    built.append(r)

    r = Repo(root, "evil/ctrl-GGUF", 10, 0, behaviour="anyresolve")
    r.add_listed(EVIL_CTRL, "ctrl.gguf", aid)
    r.finish(*info_a)
    built.append(r)

    r = Repo(root, "evil/hugesize-GGUF", 10, 0)
    r.add_listed("aidreams260K-f32.gguf", "aidreams260K-f32.gguf", aid, list_size=1e30)
    r.finish(*info_a)
    built.append(r)

    r = Repo(root, "evil/overlong-GGUF", 10, 0)
    r.add_listed("llama-2-tiny-random.gguf", "llama-2-tiny-random.gguf", tiny, list_size=1000)
    r.finish(*info_t)
    built.append(r)

    r = Repo(root, "evil/link-GGUF", 10, 0, behaviour="linkcdn")
    r.add_real("aidreams260K-f32.gguf", aid)
    for i in range(1, 10):
        r.add_real(f"doc-{i}.md", data=f"# Notes {i}\n\nA page of the fake Hub.\n".encode())
    r.finish(*info_a)
    built.append(r)

    for name, beh in (("weaketag", "weaketag"), ("upperdigest", "upperdigest"),
                      ("startotal", "startotal"), ("norangehdr", "norangehdr")):
        r = Repo(root, f"evil/{name}-GGUF", 10, 0, behaviour=beh)
        r.add_real("aidreams260K-f32.gguf", aid)
        r.finish(*info_a)
        built.append(r)
    return built


def build(root, models, bench=False, check=False, verbose=False):
    t0 = time.monotonic()
    aid = os.path.join(models, "aidreams260K-f32.gguf")
    tiny = os.path.join(models, "llama-2-tiny-random.gguf")
    for p in (aid, tiny):
        if not os.path.isfile(p):
            raise SystemExit(f"hfgen: {p}: missing (--models DIR)")
    os.makedirs(root, exist_ok=True)
    ga, gt = read_gguf(aid), read_gguf(tiny)
    info_a = ("llama", ga.get("llama.context_length"), n_params(ga))
    info_t = ("llama", gt.get("llama.context_length"), n_params(gt))
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
           "intermediate_size": 172, "num_attention_heads": 4, "num_hidden_layers": 4,
           "num_key_value_heads": 4, "max_position_embeddings": 128, "vocab_size": 512}
    built = []

    r = Repo(root, "test/tiny-GGUF", 5000, 42)
    r.add_real("aidreams260K-f32.gguf", aid)
    r.add_real("llama-2-tiny-random.gguf", tiny)
    r.finish(*info_a, config=cfg)
    built.append(r)

    r = Repo(root, "test/split-GGUF", 1200, 17)
    split_gguf(tiny, r.path("tiny-split-00001-of-00002.gguf"), r.path("tiny-split-00002-of-00002.gguf"))
    for rel in ("tiny-split-00001-of-00002.gguf", "tiny-split-00002-of-00002.gguf"):
        p = os.path.join(r.dir, rel)
        r.note(rel, sha256_file(p), git_blob_sha1(p), verifiable=True)
    r.finish(*info_t)
    built.append(r)

    r = Repo(root, "test/gated-GGUF", 800, 9, gated=True)
    r.add_real("aidreams260K-f32.gguf", aid)
    r.finish(*info_a)
    built.append(r)

    for name, beh, src, dl, info in (("cut", "cut", tiny, 300, info_t),
                                     ("norange", "norange", tiny, 200, info_t),
                                     ("baddigest", "baddigest", aid, 100, info_a)):
        r = Repo(root, f"test/{name}-GGUF", dl, 3, behaviour=beh)
        r.add_real(os.path.basename(src), src)
        r.finish(*info)
        built.append(r)

    # subfolders, and more entries than one tree page (8) when recursive (9)
    r = Repo(root, "test/folder-GGUF", 50, 1)
    r.add_real(".gitattributes", data=b"*.gguf filter=lfs diff=lfs merge=lfs -text\n")
    r.add_real("tiny/aidreams260K-f32.gguf", aid)
    r.add_real("tiny/llama-2-tiny-random.gguf", tiny)
    for rel in ("tiny-split-00001-of-00002.gguf", "tiny-split-00002-of-00002.gguf"):
        r.add_real("split/" + rel, os.path.join(root, "test/split-GGUF", rel))
    r.finish(*info_a, config=cfg)
    built.append(r)

    built += build_evil(root, aid, tiny, info_a, info_t)

    r = Repo(root, "synth/Big-70B-GGUF", 250000, 1800)
    p = r.path("Big-70B-Q4_K_M.gguf")
    h, _, npar = synth_model(p, "qwen2", QWEN2_70B, VOCAB_QWEN2, 15, "Big 70B", q4_k_m)
    r.add_synth("Big-70B-Q4_K_M.gguf", h)
    if check:
        check_synth(p, h)
    r.finish("qwen2", QWEN2_70B["context_length"], npar)
    built.append(r)

    r = Repo(root, "synth/MoE-30B-A3B-GGUF", 180000, 1500)
    p = r.path("MoE-30B-A3B-Q4_K_M.gguf")
    h, _, npar = synth_model(p, "qwen3moe", QWEN3MOE_30B, VOCAB_QWEN3, 15, "MoE 30B A3B",
                            q4_k_m)
    r.add_synth("MoE-30B-A3B-Q4_K_M.gguf", h)
    if check:
        check_synth(p, h)
    r.finish("qwen3moe", QWEN3MOE_30B["context_length"], npar)
    built.append(r)

    if bench:
        r = Repo(root, "synth/Model-7B-GGUF", 90000, 700)
        for q, (ftype, *_rest) in BENCH_QUANTS.items():
            rel = f"Model-7B-{q}.gguf"
            p = r.path(rel)
            h, _, npar = synth_model(p, "llama", LLAMA_7B, VOCAB_QWEN2, ftype, f"Model 7B {q}",
                                     bench_type_fn(q, LLAMA_7B["block_count"]))
            r.add_synth(rel, h)
            if check:
                check_synth(p, h)
        r.finish("llama", LLAMA_7B["context_length"], npar)
        built.append(r)

    if verbose:
        for r in built:
            for rel, e in sorted(r.meta["oids"].items()):
                print(f"{r.rid}/{rel}\t{e['size']}\t{e['sha256'][:16]}{'' if e['verifiable'] else ' (header)'}")
        print(f"hfgen: {len(built)} repositories in {time.monotonic() - t0:.2f} s")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description="Build the fake Hugging Face Hub's repositories.")
    ap.add_argument("root")
    ap.add_argument("--models", default=os.path.join(here, "..", "..", "tests", "fixtures", "models"))
    ap.add_argument("--bench", action="store_true", help="also synth/Model-7B-GGUF (20 quantisations)")
    ap.add_argument("--check", action="store_true", help="re-read every synthetic header")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    build(a.root, os.path.normpath(a.models), a.bench, a.check, a.verbose)


if __name__ == "__main__":
    sys.exit(main())
