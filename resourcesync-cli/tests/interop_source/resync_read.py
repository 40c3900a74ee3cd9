"""Reads what `resourcesync build` publishes with the parsers of resync (PyPI), the Python
reference implementation.

    python resync_read.py CAPABILITY FILE [CAPABILITY FILE ...]

Each FILE is a document whose capability is CAPABILITY (description, capabilitylist,
resourcelist, changelist, resourcedump, changedump, resourcedump-manifest,
changedump-manifest), or a ZIP package of a dump (FILE ends with .zip; CAPABILITY is that
of its manifest.xml, which is read). Each is read by resync's class for that capability,
which checks the capability the document declares; a sitemap or a sitemapindex alike, as
resync reads an index before its parts.

Prints one JSON line per file, in order: the capability resync read, whether it parsed an
index, its entries (uri, change), the error of resync's class for the capability when
only resync's generic parser could read the document (see parse), how many change
entries lack the rs:md datetime that resync's incremental sync needs and, for a package,
the manifest entries whose path is not in the ZIP or whose bytes there differ from the
manifest's length or digests. Exits non-zero, with resync's traceback, on the first file
resync cannot read.
"""
import hashlib
import io
import json
import sys
import zipfile

from resync import CapabilityList, ChangeList, ResourceList, SourceDescription
from resync.change_dump import ChangeDump
from resync.change_dump_manifest import ChangeDumpManifest
from resync.resource_dump import ResourceDump
from resync.resource import ChangeTypeError
from resync.resource_container import ResourceContainer
from resync.resource_dump_manifest import ResourceDumpManifest
from resync.sitemap import Sitemap

CLASSES = {
    "description": SourceDescription,
    "capabilitylist": CapabilityList,
    "resourcelist": ResourceList,
    "changelist": ChangeList,
    "resourcedump": ResourceDump,
    "changedump": ChangeDump,
    "resourcedump-manifest": ResourceDumpManifest,
    "changedump-manifest": ChangeDumpManifest,
}


def parse(capability, fh):
    """The document resync reads from fh, checking its capability; whether an index; and
    the error of resync's class for the capability when only its generic parser reads it.

    resync's ChangeList takes only entries with a change (ChangeList.add_if_changed), so
    it fails on the <sitemap> entries of a Change List Index, which have none (section
    12.2 gives them from and until only); ChangeList.read, which reads an index into the
    ChangeList before its parts, fails alike. Such a document is read again by resync's
    Sitemap parser into a plain ResourceContainer, the capability still checked.
    """
    data = fh.read()
    doc = CLASSES[capability]()
    sitemap = doc.new_sitemap()
    try:
        sitemap.parse_xml(fh=io.BytesIO(data), resources=doc, capability=doc.capability_name)
        return doc, sitemap.parsed_index, None
    except ChangeTypeError as e:
        error = "%s: %s" % (type(e).__name__, e)
    container = ResourceContainer(resources=[])
    sitemap = Sitemap()
    sitemap.parse_xml(fh=io.BytesIO(data), resources=container, capability=capability)
    return container, sitemap.parsed_index, error


def describe(doc, index, error):
    resources = list(doc.resources.values() if isinstance(doc.resources, dict) else doc.resources)
    return {
        "capability": doc.md.get("capability"),
        "index": index,
        "entries": [[r.uri, r.change] for r in resources],
        "without_datetime": sum(1 for r in resources if r.change and r.ts_datetime is None),
        "class_error": error,
    }


def package(capability, path):
    with zipfile.ZipFile(path) as z:
        names = set(z.namelist())
        with z.open("manifest.xml") as fh:
            doc, index, error = parse(capability, fh)
        out = describe(doc, index, error)
        missing = []
        differing = []
        for r in doc.resources:
            if r.change == "deleted" and r.path is None:
                continue
            name = (r.path or "").lstrip("/")
            if name not in names:
                missing.append(r.path)
                continue
            data = z.read(name)
            if ((r.length is not None and r.length != len(data))
                    or (r.md5 is not None and r.md5 != hashlib.md5(data).hexdigest())
                    or (r.sha256 is not None and r.sha256 != hashlib.sha256(data).hexdigest())):
                differing.append(r.path)
        out["missing"] = missing
        out["differing"] = differing
        return out


def main(args):
    for capability, path in zip(args[0::2], args[1::2]):
        if path.endswith(".zip"):
            out = package(capability, path)
        else:
            with open(path, "rb") as fh:
                out = describe(*parse(capability, fh))
        out["file"] = path
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
