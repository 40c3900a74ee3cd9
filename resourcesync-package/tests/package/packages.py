"""Writes packages with Python's zipfile for resourcesync-package's tests.

    python3 packages.py DIR     writes one .zip per case into DIR

Valid packages with hand-written manifests (as another implementation would write them),
one in the Python reference implementation's style (paths without the leading slash),
and one hostile package for each class of attack on archive readers. Only the standard
library: a fresh machine has Python but nothing installed.
"""
import hashlib
import os
import struct
import sys
import zipfile
import zlib

UP = "http://example.com/dataset1/capabilitylist.xml"


def manifest(entries, slash=True):
    urls = []
    for loc, path, data, extra in entries:
        md5 = hashlib.md5(data).hexdigest()
        sha = hashlib.sha256(data).hexdigest()
        attrs = extra.get("attrs", 'hash="md5:%s sha-256:%s" length="%d"' % (md5, sha, len(data)))
        p = extra.get("path", ("/" if slash else "") + path)
        urls.append('<url><loc>%s</loc><rs:md %s type="text/plain" path="%s"/></url>' % (loc, attrs, p))
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" '
        'xmlns:rs="http://www.openarchives.org/rs/terms/">'
        '<rs:ln rel="up" href="%s"/>'
        '<rs:md capability="resourcedump-manifest" at="2013-01-03T09:00:00Z"/>%s</urlset>'
        % (UP, "".join(urls))
    ).encode()


def raw_zip(path, entries):
    """Writes a ZIP byte by byte, so that headers can lie. Each entry is a dict: name and
    data (uncompressed); optional method (0 or 8), and overrides of what the headers say:
    local_name, size and csize (both headers), local_size, local_csize, local_method, pad
    (bytes before the local header, where the central directory says it starts),
    zip64 (a (size, csize) pair written as the central ZIP64 extra field), offset (where
    the central directory says the local header is)."""
    out, central = bytearray(), bytearray()
    for e in entries:
        name = e["name"].encode()
        data = e["data"]
        method = e.get("method", 0)
        stored = data if method == 0 else zlib.compress(data)[2:-4]
        crc = zlib.crc32(data)
        size, csize = e.get("size", len(data)), e.get("csize", len(stored))
        offset = e.get("offset", len(out))
        out += e.get("pad", b"")
        local_name = e.get("local_name", e["name"]).encode()
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0x800, e.get("local_method", method),
                           0, 0x21, crc, e.get("local_csize", csize) & 0xFFFFFFFF,
                           e.get("local_size", size) & 0xFFFFFFFF, len(local_name), 0)
        out += local_name + stored
        extra = b""
        if "zip64" in e:
            size64, csize64 = e["zip64"]
            extra = struct.pack("<HHQQ", 1, 16, size64, csize64)
            size = csize = 0xFFFFFFFF
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 0x031E, 45, 0x800, method, 0,
                               0x21, crc, csize & 0xFFFFFFFF, size & 0xFFFFFFFF, len(name),
                               len(extra), 0, 0, 0, 0o100644 << 16, offset)
        central += name + extra
    start = len(out)
    out += central
    out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(entries), len(entries), len(central),
                       start, 0)
    with open(path, "wb") as f:
        f.write(out)


def write(path, files, compression=zipfile.ZIP_DEFLATED):
    with zipfile.ZipFile(path, "w", compression) as z:
        for name, data, info in files:
            zi = info or zipfile.ZipInfo(name)
            if info is None:
                zi.compress_type = compression
                zi.external_attr = 0o100644 << 16
            z.writestr(zi, data)


def patch(path, old, new):
    with open(path, "rb") as f:
        data = f.read()
    assert old in data and len(old) == len(new)
    with open(path, "wb") as f:
        f.write(data.replace(old, new))


def main(d):
    r1, r2 = b"first resource\n", b"second resource, somewhat longer\n" * 10
    good = [("http://example.com/res1", "resources/res1", r1, {}),
            ("http://example.com/res2", "resources/sub/res2", r2, {})]

    def package(name, entries=good, extra=(), slash=True, compression=zipfile.ZIP_DEFLATED,
                bitstreams=None):
        files = [(p, data, None) for _, p, data, _ in (bitstreams or entries)]
        files += list(extra)
        files.append(("manifest.xml", manifest(entries, slash), None))
        write(os.path.join(d, name), files, compression)

    # Valid: written by another implementation, deflated and stored.
    package("valid-deflated.zip")
    package("valid-stored.zip", compression=zipfile.ZIP_STORED)
    # The Python reference implementation's style: no leading slash in paths.
    package("resync-style.zip", slash=False)
    # A file the manifest does not list.
    package("unlisted.zip", extra=[("extra.txt", b"not listed", None)])

    # Structure.
    write(os.path.join(d, "no-manifest.zip"), [("resources/res1", r1, None)])
    write(os.path.join(d, "manifest-in-folder.zip"),
          [("resources/res1", r1, None), ("data/manifest.xml", manifest(good[:1]), None)])
    write(os.path.join(d, "manifest-upper-case.zip"),
          [("resources/res1", r1, None), ("MANIFEST.XML", manifest(good[:1]), None)])
    z = os.path.join(d, "two-manifests.zip")
    write(z, [("resources/res1", r1, None), ("manifest.xml", manifest(good[:1]), None),
              ("manifest.xml", manifest(good[:1]), None)])
    write(os.path.join(d, "manifest-not-xml.zip"),
          [("resources/res1", r1, None),
           ("manifest.xml", b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
                            b'<url><loc>&bogus;</loc></url></urlset>', None)])
    package("missing-bitstream.zip", bitstreams=good[:1])
    package("listed-twice.zip", entries=[good[0], good[0]], bitstreams=good[:1])
    with open(os.path.join(d, "valid-deflated.zip"), "rb") as f:
        data = f.read()
    with open(os.path.join(d, "truncated.zip"), "wb") as f:
        f.write(data[: len(data) - 40])
    with open(os.path.join(d, "not-a-zip.zip"), "wb") as f:
        f.write(b"<html>not a zip</html>")

    # Names that escape.
    for case, evil in [("dotdot", "../evil"), ("nested-dotdot", "a/../../evil"),
                       ("absolute", "/etc/evil"), ("backslash", "a\\..\\..\\evil"),
                       ("drive", "C:/evil")]:
        entries = [("http://example.com/evil", evil.lstrip("/"), b"evil", {})]
        files = [(evil, b"evil", None), ("manifest.xml", manifest(entries), None)]
        write(os.path.join(d, "name-%s.zip" % case), files)
    z = os.path.join(d, "name-nul.zip")
    write(z, [("aXb", b"evil", None), ("manifest.xml", manifest([("http://example.com/e", "a", b"", {})]), None)])
    patch(z, b"aXb", b"a\0b")

    # Links and special files.
    link = zipfile.ZipInfo("resources/res1")
    link.external_attr = (0o120777 << 16)
    link.create_system = 3
    write(os.path.join(d, "symlink.zip"),
          [("resources/res1", b"/etc/passwd", link), ("manifest.xml", manifest(good[:1]), None)])
    fifo = zipfile.ZipInfo("resources/res1")
    fifo.external_attr = (0o010644 << 16)
    fifo.create_system = 3
    write(os.path.join(d, "special-file.zip"),
          [("resources/res1", r1, fifo), ("manifest.xml", manifest(good[:1]), None)])

    # Encryption and methods.
    z = os.path.join(d, "encrypted.zip")
    write(z, [("resources/res1", r1, None), ("manifest.xml", manifest(good[:1]), None)],
          zipfile.ZIP_STORED)
    with open(z, "rb") as f:
        data = bytearray(f.read())
    # Set bit 0 (encrypted) of the general purpose flags in every local and central header.
    for sig, offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        at = data.find(sig)
        while at != -1:
            data[at + offset] |= 1
            at = data.find(sig, at + 4)
    with open(z, "wb") as f:
        f.write(data)
    package("bzip2.zip", compression=zipfile.ZIP_BZIP2)

    # Bombs: 64 MiB of zeros in a few dozen kilobytes, the manifest declaring no length
    # (the ratio limit stops it), or a length it inflates past.
    zeros = b"\0" * (64 << 20)
    package("bomb.zip", entries=[("http://example.com/zeros", "zeros", zeros, {"attrs": ""})])
    package("bomb-declared-short.zip",
            entries=[("http://example.com/zeros", "zeros", zeros,
                      {"attrs": 'length="%d"' % (1 << 20)})])
    # Not a bomb: the same zeros with their length and hashes declared, as honest data
    # that compresses a thousand times (a sparse file) is.
    package("zeros.zip", entries=[("http://example.com/zeros", "zeros", zeros, {})])

    # Fixity: the manifest disagrees with the bytes.
    wrong_md5 = 'hash="md5:%s" length="%d"' % ("0" * 32, len(r1))
    wrong_sha = 'hash="sha-256:%s" length="%d"' % ("0" * 64, len(r1))
    wrong_len = 'hash="md5:%s" length="%d"' % (hashlib.md5(r1).hexdigest(), len(r1) + 1)
    short_len = 'length="%d"' % (len(r1) - 1)
    for case, attrs in [("md5", wrong_md5), ("sha256", wrong_sha), ("length", wrong_len),
                        ("short", short_len)]:
        entries = [("http://example.com/res1", "resources/res1", r1, {"attrs": attrs})]
        package("fixity-%s.zip" % case, entries=entries)

    # Manifest paths that name no bitstream (the package has resources/res1 and
    # resources/sub/res2, and maybe a directory entry): the second entry's path.
    for case, path, dirs in [
        ("network", "//server/share/resources/res1", []),
        ("root", "/", []),
        ("empty", "", []),
        ("trailing-slash", "/resources/sub/res2/", []),
        ("trailing-slash-directory", "/resources/sub/", ["resources/sub/"]),
        ("directory-entry", "/resources/sub", ["resources/sub/"]),
        ("implied-directory", "/resources/sub", []),
        ("dot", "/resources/./res1", []),
        ("dotdot", "/resources/sub/../res1", []),
        ("empty-segment", "/resources//res1", []),
        ("backslash", "\\\\server\\share\\res1", []),
        ("drive", "/C:/resources/res1", []),
        ("manifest", "/manifest.xml", []),
        ("long-segment", "/resources/" + "x" * 256, []),
        ("twice", "/resources/res1", []),
        ("twice-without-slash", "resources/res1", []),
    ]:
        entries = [good[0], (good[1][0], good[1][1], good[1][2], {"path": path})]
        package("path-%s.zip" % case, entries=entries,
                extra=[(d, b"", None) for d in dirs])

    # ZIP headers that lie (written byte by byte). Each has resources/res1 and a manifest
    # listing it; the first entry is the one that lies.
    def lying(case, entry, extra=()):
        listed = [("http://example.com/res1", "resources/res1", r1, {})]
        raw_zip(os.path.join(d, "zip-%s.zip" % case),
                [dict({"name": "resources/res1", "data": r1}, **entry)] + list(extra)
                + [{"name": "manifest.xml", "data": manifest(listed)}])

    lying("stored-claims-gigabytes", {"size": 3 << 30, "csize": 3 << 30})
    lying("deflated-claims-gigabytes", {"method": 8, "size": 3 << 30})
    lying("stored-two-sizes", {"size": len(r1) + 1})
    lying("deflated-shorter-than-declared", {"method": 8, "size": len(r1) + 10})
    lying("deflated-longer-than-declared", {"method": 8, "size": len(r1) - 5})
    lying("zip64-exabytes-deflated", {"method": 8, "zip64": (1 << 60, len(zlib.compress(r1)) - 6)})
    lying("zip64-exabytes-compressed", {"method": 8, "zip64": (len(r1), 1 << 60)})
    lying("zip64-exabytes-stored", {"zip64": (1 << 60, 1 << 60)})
    lying("zip64-fewer-deflated", {"method": 8, "zip64": (3, len(zlib.compress(r1)) - 6),
                                   "local_size": 3})
    lying("zip64-fewer-stored", {"zip64": (3, 3), "local_size": 3, "local_csize": 3})
    lying("local-name", {"local_name": "resources/evil"})
    lying("local-size", {"local_size": len(r1) + 1, "local_csize": len(r1) + 1})
    lying("local-method", {"local_method": 8})
    lying("local-missing", {"pad": b"\0" * 64})
    lying("local-shifted", {"offset": 1})
    lying("overlap", {}, [{"name": "resources/res2", "data": r1, "offset": 0}])
    listed = [("http://example.com/res1", "resources/res1", r1, {})]
    raw_zip(os.path.join(d, "zip-local-name-manifest.zip"),
            [{"name": "resources/res1", "data": r1},
             {"name": "manifest.xml", "data": manifest(listed), "local_name": "manifest.xm_"}])

    # Names that one file system path would hold twice.
    for case, first, second in [
            ("case", "resources/res1", "resources/RES1"),
            ("case-sharp-s", "resources/stra\u00dfe", "resources/STRASSE"),
            ("nfd", "resources/caf\u00e9", "resources/cafe\u0301"),
            ("file-as-directory", "resources/res1", "resources/res1/x"),
            ("directory-entry", "resources/res1", "resources/res1/")]:
        listed = [("http://example.com/res1", first, r1, {})]
        write(os.path.join(d, "collide-%s.zip" % case),
              [(first, r1, None), (second, b"" if second.endswith("/") else r1, None),
               ("manifest.xml", manifest(listed), None)])
    write(os.path.join(d, "name-long-segment.zip"),
          [("resources/" + "x" * 256, r1, None),
           ("manifest.xml", manifest([("http://example.com/e", "resources/" + "x" * 256, r1, {})]), None)])


if __name__ == "__main__":
    main(sys.argv[1])
