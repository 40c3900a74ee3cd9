"""Interop with the Python reference implementation, resync (PyPI).

    python resync_interop.py write DIR    writes documents with resync into DIR, and
                                          DIR/expected.json with what resync reads back
    python resync_interop.py read FILE..  reads each file with resync's own parser and
                                          prints, per file, one JSON line of what it read

Both describe a document the same way: its capability, the timestamps of its at/from,
and per resource uri, timestamp (of lastmod), md5, sha256, length, mime_type, change,
path, and links (rel, href). Timestamps are seconds since the epoch as resync computes
them.
"""
import json
import os
import sys

from resync import CapabilityList, ChangeList, Resource, ResourceList, SourceDescription
from resync.archives import ChangeListArchive
from resync.change_dump_manifest import ChangeDumpManifest
from resync.resource_container import ResourceContainer
from resync.resource_dump_manifest import ResourceDumpManifest
from resync.sitemap import Sitemap

UP = "http://example.com/dataset1/capabilitylist.xml"


def describe(container):
    md = container.md
    out = {
        "capability": md.get("capability"),
        "at": container.md_at and Resource(uri="x", lastmod=container.md_at).timestamp,
        "from": container.md_from and Resource(uri="x", lastmod=container.md_from).timestamp,
        "links": sorted([[ln.get("rel"), ln.get("href")] for ln in container.ln]),
        "resources": [],
    }
    for r in container.resources if hasattr(container, "resources") else container:
        out["resources"].append({
            "uri": r.uri,
            "timestamp": r.timestamp,
            "md5": r.md5,
            "sha256": r.sha256,
            "length": r.length,
            "mime_type": r.mime_type,
            "change": r.change,
            "path": r.path,
            "capability": r.capability,
            "links": sorted([[ln.get("rel"), ln.get("href")] for ln in (r.ln or [])]),
        })
    return out


def parse(path):
    container = ResourceContainer(resources=[])
    with open(path, "rb") as fh:
        Sitemap().parse_xml(fh=fh, resources=container)
    return container


def write(directory):
    docs = {}

    rl = ResourceList()
    rl.up = UP
    rl.md_at = "2013-01-03T09:00:00Z"
    rl.md_completed = "2013-01-03T09:01:00Z"
    rl.add(Resource("http://example.com/res1", lastmod="2013-01-02T13:00:00Z",
                    md5="1584abdf8ebdc9802ac0c6a7402c03b6", length=8876, mime_type="text/html"))
    rl.add(Resource("http://example.com/res2?a=1&b=2", lastmod="2013-01-02T14:00:00.5Z",
                    sha256="854f61290e2e197a11bc91063afce22e43f8ccc655237050ace766adc68dc784",
                    length=14599, mime_type="application/pdf"))
    r3 = Resource("http://example.com/res3", lastmod="2013-01-02", length=0)
    r3.link_set(rel="duplicate", href="http://mirror.example.com/res3", pri="1")
    rl.add(r3)
    docs["resourcelist.xml"] = rl

    cl = ChangeList()
    cl.up = UP
    cl.md_from = "2013-01-03T00:00:00Z"
    cl.md_until = "2013-01-04T00:00:00Z"
    for i, change in enumerate(["created", "updated", "deleted", "updated"]):
        cl.add(Resource("http://example.com/res%d" % (i % 3), lastmod="2013-01-03T1%d:00:00Z" % i,
                        change=change))
    docs["changelist.xml"] = cl

    caps = CapabilityList()
    caps.up = "http://example.com/.well-known/resourcesync"
    caps.describedby = "http://example.com/info_about_set1.xml"
    caps.add_capability(uri="http://example.com/dataset1/resourcelist.xml", name="resourcelist")
    caps.add_capability(uri="http://example.com/dataset1/changelist.xml", name="changelist")
    docs["capabilitylist.xml"] = caps

    sd = SourceDescription()
    sd.describedby = "http://example.com/info_about_source.xml"
    sd.add_capability_list("http://example.com/dataset1/capabilitylist.xml")
    docs["description.xml"] = sd

    rdm = ResourceDumpManifest()
    rdm.up = UP
    rdm.md_at = "2013-01-03T09:00:00Z"
    # resync writes manifest paths without the leading slash the standard requires.
    rdm.add(Resource("http://example.com/res1", lastmod="2013-01-02T13:00:00Z", length=8876,
                     md5="1584abdf8ebdc9802ac0c6a7402c03b6", mime_type="text/html",
                     path="resources/res1"))
    docs["resourcedump-manifest.xml"] = rdm

    cdm = ChangeDumpManifest()
    cdm.up = UP
    cdm.md_from = "2013-01-02T00:00:00Z"
    cdm.add(Resource("http://example.com/res7.html", lastmod="2013-01-02T12:00:00Z",
                     change="created", path="/changes/res7.html", mime_type="text/html"))
    docs["changedump-manifest.xml"] = cdm

    cla = ChangeListArchive()
    cla.up = UP
    cla.add(Resource("http://example.com/changelist1.xml", md_from="2013-01-01T09:00:00Z",
                     md_until="2013-01-02T09:00:00Z"))
    docs["changelist-archive.xml"] = cla

    expected = {}
    for name, doc in docs.items():
        path = os.path.join(directory, name)
        with open(path, "w") as fh:
            fh.write(doc.as_xml())
        expected[name] = describe(parse(path))
    with open(os.path.join(directory, "expected.json"), "w") as fh:
        json.dump(expected, fh, indent=1)


def main():
    if sys.argv[1] == "write":
        write(sys.argv[2])
    elif sys.argv[1] == "read":
        for path in sys.argv[2:]:
            print(json.dumps(describe(parse(path))))
    else:
        sys.exit("usage: resync_interop.py write DIR | read FILE...")


if __name__ == "__main__":
    main()
