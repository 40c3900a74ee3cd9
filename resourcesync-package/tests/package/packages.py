"""Writes packages with Python's zipfile for resourcesync-package's tests.

    python3 packages.py DIR     writes one .zip per case into DIR

Valid packages with hand-written manifests (as another implementation would write them),
one in the Python reference implementation's style (paths without the leading slash),
and one hostile package for each class of attack on archive readers. Only the standard
library: a fresh machine has Python but nothing installed.
"""
import hashlib
import os
import sys
import zipfile

UP = "http://example.com/dataset1/capabilitylist.xml"


def manifest(entries, slash=True):
    urls = []
    for loc, path, data, extra in entries:
        md5 = hashlib.md5(data).hexdigest()
        sha = hashlib.sha256(data).hexdigest()
        attrs = extra.get("attrs", 'hash="md5:%s sha-256:%s" length="%d"' % (md5, sha, len(data)))
        p = ("/" if slash else "") + path
        urls.append('<url><loc>%s</loc><rs:md %s type="text/plain" path="%s"/></url>' % (loc, attrs, p))
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" '
        'xmlns:rs="http://www.openarchives.org/rs/terms/">'
        '<rs:ln rel="up" href="%s"/>'
        '<rs:md capability="resourcedump-manifest" at="2013-01-03T09:00:00Z"/>%s</urlset>'
        % (UP, "".join(urls))
    ).encode()


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

    # Bombs: 64 MiB of zeros in a few dozen kilobytes.
    zeros = b"\0" * (64 << 20)
    package("bomb.zip", entries=[("http://example.com/zeros", "zeros", zeros, {})])

    # Fixity: the manifest disagrees with the bytes.
    wrong_md5 = 'hash="md5:%s" length="%d"' % ("0" * 32, len(r1))
    wrong_sha = 'hash="sha-256:%s" length="%d"' % ("0" * 64, len(r1))
    wrong_len = 'hash="md5:%s" length="%d"' % (hashlib.md5(r1).hexdigest(), len(r1) + 1)
    short_len = 'length="%d"' % (len(r1) - 1)
    for case, attrs in [("md5", wrong_md5), ("sha256", wrong_sha), ("length", wrong_len),
                        ("short", short_len)]:
        entries = [("http://example.com/res1", "resources/res1", r1, {"attrs": attrs})]
        package("fixity-%s.zip" % case, entries=entries)


if __name__ == "__main__":
    main(sys.argv[1])
