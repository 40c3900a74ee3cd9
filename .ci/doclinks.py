#!/usr/bin/env python3
"""Checks the HTML that rustdoc wrote for links that lead nowhere.

rustdoc's broken-link lint cannot see a link to another crate's item that resolves but
whose page rustdoc cannot place: documented with `--no-deps`, alone or in any order,
rustdoc writes such a link's Rust path as its address (a link that leads nowhere), or,
for a shortcut link, leaves the brackets in the text without a link.

Usage: doclinks.py [--alone] <doc-dir> [<crate>...]
  default  the docs were built with their dependencies (as `cargo doc` and docs.rs do):
           every link must lead somewhere and no link text may be left unresolved.
  --alone  the crates were documented alone (`--no-deps`): no link may lead nowhere;
           shortcut links to other crates' items are then left as text, which is what
           rustdoc can do without those crates' pages, and is accepted.
Only the pages of the named crates (default: every resourcesync_* crate) are checked.
Exits 1 and lists each problem.
"""
import os
import re
import sys
import urllib.parse

args = sys.argv[1:]
alone = "--alone" in args
args = [a for a in args if a != "--alone"]
root, crates = args[0], set(args[1:])
problems = set()
for crate in sorted(os.listdir(root)):
    top = os.path.join(root, crate)
    if not os.path.isdir(top) or not (crate in crates or (not crates and crate.startswith("resourcesync_"))):
        continue
    for dirpath, _, files in os.walk(top):
        for name in files:
            if not name.endswith(".html"):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            text = open(path, encoding="utf-8", errors="replace").read()
            for href in re.findall(r'<a\s[^>]*?href="([^"#?]*)(?:[#?][^"]*)?"', text):
                if not href or href.startswith(("http:", "https:", "mailto:", "javascript:")):
                    continue
                if "::" in href:
                    problems.add(f"{rel}: a Rust path written as an address: {href}")
                    continue
                target = os.path.normpath(os.path.join(dirpath, urllib.parse.unquote(href)))
                # Other crates' pages are not there when a crate is documented alone.
                other = os.path.relpath(target, root).split(os.sep)[0] != crate
                # A module of another crate's that rustdoc renders no page for (hidden:
                # zerocopy's `pointer::invariant`, through object_store's rand) shows up
                # in the blanket impls listed on every type; its links are rustdoc's to
                # place, not ours.
                hidden = other and not os.path.isdir(os.path.dirname(target))
                if not os.path.exists(target) and not (alone and other) and not hidden:
                    problems.add(f"{rel}: link to {href} leads nowhere")
            if not alone:
                for left in re.findall(r"\[<code>([^<]*)</code>\]", text):
                    problems.add(f"{rel}: unresolved link text [{left}]")
for p in sorted(problems):
    print(p)
sys.exit(1 if problems else 0)
