"""Starts the Python resync-simulator (PyPI resync-simulator 1.1.0) for the tests, bound to
127.0.0.1.

    python launch.py PORT RESOURCES EVENTS DELAY

The simulator's wheel ships no config files, so the configuration is given here; it
listens on every interface, so its server is bound to loopback; and on Python 3.11 its
change thread dies when it calls random.sample on dictionary keys (a TypeError since
3.11), so random.sample is given a list. Prints "ready" once it serves, and "quiet"
once it has made its EVENTS changes; it then serves on until killed.
"""
import logging
import random
import sys

import tornado.httpserver

from simulator.changememory import DynamicChangeList
from simulator.http import HTTPInterface
from simulator.source import DynamicResourceListBuilder, Source

_sample = random.sample


def sample(population, k, **kwargs):
    if not isinstance(population, (list, tuple, range, str)):
        population = sorted(population)
    return _sample(population, k, **kwargs)


random.sample = sample

_listen = tornado.httpserver.HTTPServer.listen


def listen(self, port, address="", **kwargs):
    return _listen(self, port, address="127.0.0.1", **kwargs)


tornado.httpserver.HTTPServer.listen = listen


def main():
    port, resources, events, delay = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    logging.basicConfig(level=logging.WARNING)
    config = {
        "number_of_resources": resources,
        "change_delay": delay,
        "event_types": ["create", "update", "delete"],
        "average_payload": 1000,
        "max_events": events,
        "stats_interval": 1000000,
    }
    source = Source(config, "http://127.0.0.1:%d" % port, port)
    source.add_resource_list_builder(
        DynamicResourceListBuilder(source, {"class": "DynamicResourceListBuilder", "uri_path": "resourcelist.xml"})
    )
    source.add_changememory(
        DynamicChangeList(source, {"class": "DynamicChangeList", "uri_path": "changelist.xml", "max_changes": 1000000})
    )
    source.bootstrap()
    http = HTTPInterface(source)
    http.daemon = True
    http.start()
    print("ready", flush=True)
    source.simulate_changes()
    print("quiet", flush=True)
    http.join()


if __name__ == "__main__":
    main()
