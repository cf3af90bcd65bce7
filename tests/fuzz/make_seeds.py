#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz targets into tests/fuzz/corpus/<target>/ (deterministic).

    tests/fuzz/make_seeds.py [--gcore CORE]

--gcore takes a core written by gdb's gcore (e.g. `gcore -o /tmp/c $(pgrep -n sleep)`) and keeps its
CORE notes (without register-file notes, which hold stray process bytes) in a kernel-layout seed
named core_notes/real_gcore_notes; without it that seed is left as it is. Seeds stay < 64 KiB.
The input formats are described at the top of each fuzz_*.cc.
"""
import argparse
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")

# ---- ELF constants (x86_64) ----
ET_CORE, EM_X86_64, PT_LOAD, PT_NOTE = 4, 62, 1, 4
NT_PRSTATUS, NT_PRPSINFO, NT_AUXV, NT_SIGINFO, NT_FILE = 1, 3, 6, 0x53494749, 0x46494c45
PN_XNUM = 0xFFFF
PAGE = 4096


def write(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    assert len(data) < 64 * 1024, (target, name, len(data))
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def pad(b, align):
    return b + b"\0" * (-len(b) % align)


def note(name, ntype, desc, align=4):
    """One note; `align` 8 is the ELF_T_NHDR8 layout (descriptor 8-aligned from the note start)."""
    n = name.encode() + b"\0" if name else b""
    head = struct.pack("<III", len(n), len(desc), ntype)
    return pad(head + n, align) + pad(desc, align)


def prstatus(tid, sig):
    d = bytearray(336)                      # sizeof(struct elf_prstatus) on x86_64
    struct.pack_into("<h", d, 12, sig)       # pr_cursig
    struct.pack_into("<iiii", d, 32, tid, 1, tid, tid)  # pr_pid, pr_ppid, pr_pgrp, pr_sid
    return bytes(d)


def prpsinfo(pid, fname, psargs):
    d = bytearray(136)
    struct.pack_into("<i", d, 24, pid)
    d[40:40 + 16] = fname.encode()[:15].ljust(16, b"\0")
    d[56:56 + 80] = psargs.encode()[:79].ljust(80, b"\0")
    return bytes(d)


def siginfo(signo, code, addr):
    d = bytearray(128)
    struct.pack_into("<iii", d, 0, signo, 0, code)
    struct.pack_into("<Q", d, 16, addr)
    return bytes(d)


def nt_file(entries, page_size=PAGE):
    head = struct.pack("<QQ", len(entries), page_size)
    head += b"".join(struct.pack("<QQQ", s, e, o) for s, e, o, _ in entries)
    return head + b"".join(p.encode() + b"\0" for *_, p in entries)


def kernel_notes(tids=(4242, 4243), signo=11, code=1, addr=0xdead0000):
    files = [(0x555555554000, 0x555555556000, 0, "/usr/bin/crasher"),
             (0x7ffff7dd0000, 0x7ffff7f60000, 0x28, "/usr/lib/x86_64-linux-gnu/libc.so.6"),
             (0x7ffff7fc0000, 0x7ffff7fc2000, 0, "/tmp/deleted file (deleted)")]
    out = note("CORE", NT_PRSTATUS, prstatus(tids[0], signo))
    out += note("CORE", NT_PRPSINFO, prpsinfo(tids[0], "crasher", "/usr/bin/crasher segv "))
    out += note("CORE", NT_SIGINFO, siginfo(signo, code, addr))
    out += note("CORE", NT_AUXV, struct.pack("<QQQQ", 6, PAGE, 0, 0))
    out += note("CORE", NT_FILE, nt_file(files))
    out += note("LINUX", 0x202, b"\0" * 64)  # NT_X86_XSTATE, not ours to read
    for t in tids[1:]:
        out += note("CORE", NT_PRSTATUS, prstatus(t, 0))
    return out


def core(notes, layout="kernel", loads=((0x555555554000, 64, PAGE), (0x7ffff7ff0000, 0, PAGE)),
         note_align=4, phnum=None, elfclass=2, data=1):
    """An ELF core: kernel layout = headers, notes, page padding, segment data; gdb layout =
    headers, segment data, notes (gcore writes the notes after the memory)."""
    nph = 1 + len(loads)
    ehdr_size, phdr_size = 64, 56
    headers_end = ehdr_size + nph * phdr_size
    seg_bytes = [bytes((i * 7 + j) % 251 + 1 for j in range(filesz)) for i, (_, filesz, _) in enumerate(loads)]
    if layout == "kernel":
        notes_off = headers_end
        seg_off = (notes_off + len(notes) + PAGE - 1) // PAGE * PAGE if data else notes_off + len(notes)
    else:
        seg_off = headers_end
        notes_off = seg_off + sum(len(s) for s in seg_bytes)
    ident = b"\x7fELF" + bytes([elfclass, 1, 1, 0]) + b"\0" * 8
    eh = ident + struct.pack("<HHIQQQIHHHHHH", ET_CORE, EM_X86_64, 1, 0, ehdr_size, 0, 0, ehdr_size,
                             phdr_size, PN_XNUM if phnum == PN_XNUM else (phnum or nph), 64, 0, 0)
    ph = struct.pack("<IIQQQQQQ", PT_NOTE, 4, notes_off, 0, 0, len(notes), 0, note_align)
    off = seg_off
    for (vaddr, filesz, memsz), seg in zip(loads, seg_bytes):
        ph += struct.pack("<IIQQQQQQ", PT_LOAD, 5, off, vaddr, 0, filesz, memsz, PAGE)
        off += filesz
    segs = b"".join(seg_bytes)
    out = bytearray(eh + ph)
    if layout == "kernel":
        out += notes
        out += b"\0" * (seg_off - len(out))
        out += segs
    else:
        out += segs + notes
    return bytes(out)


def gcore_notes(path):
    """The CORE notes of a gcore file, minus register files (NT_FPREGSET 2, XSTATE) and GDB notes."""
    with open(path, "rb") as f:
        blob = f.read()
    phoff, = struct.unpack_from("<Q", blob, 32)
    phnum, = struct.unpack_from("<H", blob, 56)
    for i in range(phnum):
        ptype, _, off, _, _, filesz = struct.unpack_from("<IIQQQQ", blob, phoff + 56 * i)
        if ptype == PT_NOTE:
            break
    else:
        raise SystemExit("no PT_NOTE in " + path)
    seg, out, pos = blob[off:off + filesz], b"", 0
    while pos + 12 <= len(seg):
        namesz, descsz, ntype = struct.unpack_from("<III", seg, pos)
        name = seg[pos + 12:pos + 12 + namesz]
        desc_at = pos + 12 + (namesz + 3) // 4 * 4
        desc = seg[desc_at:desc_at + descsz]
        pos = desc_at + (descsz + 3) // 4 * 4
        if name.rstrip(b"\0") == b"CORE" and ntype in (NT_PRSTATUS, NT_PRPSINFO, NT_AUXV, NT_SIGINFO, NT_FILE):
            if ntype == NT_PRSTATUS:  # keep pid/cursig, drop the register values
                desc = desc[:112] + b"\0" * (len(desc) - 112)
            out += note("CORE", ntype, desc)
    return out


def seeds_core_notes(gcore):
    t = "fuzz_core_notes"
    kn = kernel_notes()
    kcore = core(kn)
    # [cap][K][sizes...][stream]
    write(t, "kernel_layout", b"\x00\x00" + kcore)
    write(t, "kernel_layout_chunks_1_7_64", b"\x00\x03\x00\x06\x3f" + kcore)
    write(t, "gdb_layout_notes_after_memory", b"\x00\x00" + core(kn, layout="gdb"))
    write(t, "notes_align8", b"\x00\x00" + core(b"".join(note("CORE", ty, d, 8) for ty, d in
                                                  [(NT_PRSTATUS, prstatus(7, 6)), (NT_SIGINFO, siginfo(6, -6, 0))]),
                                             note_align=8))
    write(t, "pn_xnum", b"\x00\x00" + core(kn, phnum=PN_XNUM))
    write(t, "cap_128_bytes", b"\x02\x00" + kcore)
    write(t, "truncated_in_notes", b"\x00\x01\xff" + kcore[:64 + 3 * 56 + 700])
    write(t, "elfclass32_header", b"\x00\x00" + core(kn, elfclass=1, data=0)[:52])
    write(t, "sigkill_no_siginfo_fault", b"\x00\x00" + core(note("CORE", NT_PRSTATUS, prstatus(99, 9)) +
                                                          note("CORE", NT_SIGINFO, siginfo(9, 0, 0x1234)), data=0))
    if gcore:
        write(t, "real_gcore_notes", b"\x00\x00" + core(gcore_notes(gcore), data=0))


def rec(rtype, offset, length, payload=b"", size=32, flags=0):
    return struct.pack("<IIQQQ", size, rtype, flags, offset, length) + b"\x5a" * (size - 32) + payload


def seeds_records():
    t = "fuzz_records"
    DATA, END, ZERO = 0, 1, 2
    a, b = bytes(range(1, 65)), b"tail bytes here!"
    sparse_stream = rec(DATA, 0, 64, a) + rec(ZERO, 64, 4096) + rec(DATA, 4160, 16, b) + rec(END, 4176, 0)
    # [flags][K][sizes...][stream]
    write(t, "sparse_data_zero_data_end", b"\x01\x00" + sparse_stream)
    write(t, "sparse_chunks_1_4_33", b"\x01\x03\x00\x03\x20" + sparse_stream)
    write(t, "records_no_sparse", b"\x00\x00" + rec(DATA, 0, 64, a) + rec(DATA, 64, 16, b) + rec(END, 80, 0))
    write(t, "header_size_40", b"\x01\x02\x04\x1f" + rec(DATA, 0, 16, b, size=40) + rec(ZERO, 16, 8192, size=40) +
          rec(END, 8208, 0, size=40))
    write(t, "truncated_no_end", b"\x01\x00" + rec(DATA, 0, 64, a) + rec(ZERO, 64, 4096) + rec(DATA, 4160, 16, b[:5]))
    write(t, "gap_is_error", b"\x01\x00" + rec(DATA, 0, 16, b) + rec(DATA, 32, 16, b))
    write(t, "trailing_zero_end", b"\x01\x00" + rec(DATA, 0, 16, b) + rec(ZERO, 16, 1 << 40) + rec(END, 16 + (1 << 40), 0))


def seeds_request_ack():
    t = "fuzz_request_ack"
    v618 = bytes.fromhex("10000000100000000f00000000000000")
    # tail: [flags][close bit sel][memory_types u64][marker u32]
    def tail(flags, bit=0, mt=0, marker=0):
        return struct.pack("<BBQI", flags, bit, mt, marker)
    write(t, "linux_6_18_request", v618)
    write(t, "linux_6_18_kernel_wait", v618 + tail(0x04 | 0x08 | 0x10 | 0x20))
    write(t, "linux_6_18_userspace_marker_unsupported", v618 + tail(0x01, marker=3))
    write(t, "linux_6_18_reject", v618 + tail(0x02 | 0x04 | 0x20, marker=4))
    ver1 = struct.pack("<IIQQQ", 32, 24, 0xFF, 0x33, 0x1FF)
    write(t, "ver1_all_flags", ver1 + tail(0x04 | 0x08 | 0x10 | 0x20 | 0x40, 0, 0x1F3))
    write(t, "ver1_close_files_bit_9", struct.pack("<IIQQQ", 32, 24, 0x27F, 0x33, 0x1FF) + tail(0x7C, 2, 0x3))
    write(t, "ver1_ack20_no_room_for_types", struct.pack("<IIQQQ", 32, 20, 0x7F, 0x33, 0x1FF) + tail(0x5C, 0, 0x1))
    write(t, "future_size_40", struct.pack("<IIQQQQ", 40, 32, 0x1FF, 0x33, 0x3FF, 0xAAAA) + tail(0x7C, 0, 0x1FF))
    write(t, "records_without_sparse", struct.pack("<IIQQQ", 32, 24, 0x1F, 0, 0) + tail(0x1C))
    write(t, "plain_mode_elf_magic", b"\x7fELF\x02\x01\x01\x00" + b"\0" * 8)
    write(t, "size_too_small", struct.pack("<IIQ", 8, 16, 0xF))


def seeds_config():
    t = "fuzz_config"
    shipped = os.path.join(HERE, "..", "..", "config", "coredumpd.json")
    write(t, "empty_object.json", b"{}")
    if os.path.exists(shipped):
        shutil.copyfile(shipped, os.path.join(CORPUS, t, "shipped_coredumpd.json"))
    write(t, "rules.json", b"""{
  "defaults": {"action": "store", "records": true, "sparse": false, "memory_types": ["anon_private", "elf_headers"],
               "post_dump": [], "max_core_bytes": 1073741824, "over_size": "reject"},
  "rules": [
    {"name": "browsers", "match": {"exe": "/usr/lib/firefox*/*"}, "action": "metadata-only"},
    {"name": "root", "match": {"uid": 0, "comm": "sshd"}, "action": "reject", "capture_environ": true},
    {"name": "big", "match": {"cgroup": "/system.slice/*"}, "memory_types": 51, "compression_level": 19}
  ]
}""")
    write(t, "scalars.json", b"""// comment
{"socket": "/run/x.sock", "store": "/var/tmp/cores", "handshake_timeout_ms": 10, "stream_idle_timeout_ms": 3600000,
 "listen_backlog": 16, "dump_workers": 256, "collector_threads": 64, "compression": {"level": 19, "threads": 0},
 "close_files_bit": 256, "collector_budget_ms": 1, "testing": {"collector_delay_ms": 0} /* block */}""")
    write(t, "bad_values.json", b'{"dump_workers": 0, "rules": [{"name": 1}], "socket": "relative"}')
    # The shipped per-runtime example drop-ins (config/examples/*.json).
    examples = os.path.join(HERE, "..", "..", "config", "examples")
    if os.path.isdir(examples):
        for name in sorted(os.listdir(examples)):
            if name.endswith(".json"):
                shutil.copyfile(os.path.join(examples, name), os.path.join(CORPUS, t, "example_" + name))
    # Per-container rules: rate limits, quotas, forwarding and every kind of matcher.
    write(t, "container_rules.json", b"""{
  "accept_forwarded": true,
  "retention": {"max_use": "2G", "keep_free": "10%", "max_age": "30d", "max_use_per_uid": "500M",
                "max_use_per_rule": {"docker-apps": "1G", "": "100M"}},
  "defaults": {"rate_limit": {"burst": 5, "interval_s": 60}, "max_use": "200M",
               "forward_socket": "/run/coredumpd/coredump.socket"},
  "rules": [
    {"name": "secrets", "match": {"container": "docker:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
     "action": "reject"},
    {"name": "docker-apps", "match": {"runtime": "docker", "namespaces": {"pid": "non-host", "user": "host"}},
     "rate_limit": {"burst": 2, "interval_s": 3600}, "max_use": "1G", "compression_level": 1},
    {"name": "pod", "match": {"container": "kubernetes:0b8e2b6a-3c1d-4e5f-9a7b-1c2d3e4f5a6b", "cgroup": "*besteffort*"},
     "action": "metadata-only", "rate_limit": null},
    {"name": "nspawn", "match": {"runtime": "systemd-nspawn", "container": "web"}, "action": "forward",
     "forward_socket": "/run/coredumpd/coredump.socket", "max_use": 1048576},
    {"name": "lxc", "match": {"runtime": "lxc", "namespaces": {"mnt": "non-host", "net": 4026531840}},
     "action": "forward", "forward_socket": "/var/run/cd.sock"},
    {"name": "units", "match": {"unit": "nginx*.service", "slice": "system.slice", "user": "root",
                                "exe": "/usr/sbin/*", "comm": "nginx", "uid": 0}, "capture_environ": true},
    {"name": "all-ns", "match": {"namespaces": {"cgroup": "host", "ipc": "host", "time": "host", "uts": "non-host"}},
     "max_core_bytes": 4096, "over_size": "reject", "memory_types": 511}
  ]
}""")
    write(t, "limit_errors.json", b"""{"defaults": {"rate_limit": {"burst": 0, "interval_s": 604801, "per": 1},
  "max_use": "1.5X", "forward_socket": "/run/../x"},
  "retention": {"max_use_per_rule": {"x": 1}},
  "rules": [{"name": "x", "match": {"namespaces": {"pdi": "guest"}}, "max_use": 2, "action": "forwad"}]}""")


def seeds_proc_text():
    t = "fuzz_proc_text"
    write(t, "cmdline", b"/usr/bin/crasher\0--mode\0\0segv\0")
    write(t, "status", b"Name:\tcrasher\nState:\tS (sleeping)\nTgid:\t4242\nNSpid:\t4242\t17\nPPid:\t1\n")
    write(t, "limits", b"Limit                     Soft Limit           Hard Limit           Units     \n"
                       b"Max core file size        unlimited            unlimited            bytes     \n")
    write(t, "locks", b"1: POSIX  ADVISORY  WRITE 1234 08:01:5678 0 EOF\n1: -> POSIX  ADVISORY  WRITE 99 08:01:5678 0 EOF\n"
                      b"2: FLOCK  ADVISORY  WRITE 1234 00:1f:2 0 EOF\n")
    write(t, "maps", b"555555554000-555555556000 r-xp 00000000 08:01 1234 /usr/bin/crasher\n"
                     b"7ffff7ff0000-7ffff7ff4000 rw-p 00000000 00:00 0 \n"
                     b"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]\n")
    write(t, "not_utf8", b"comm\xff\xfe\xc0\x80\xed\xa0\x80\xf4\x90\x80\x80 ok \xe2\x82\xac")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gcore", help="a gcore-written core to take real notes from")
    args = ap.parse_args()
    seeds_request_ack()
    seeds_records()
    seeds_core_notes(args.gcore)
    seeds_config()
    seeds_proc_text()


if __name__ == "__main__":
    main()
