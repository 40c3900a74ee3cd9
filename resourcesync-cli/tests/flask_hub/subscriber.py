"""A third-party WebSub subscriber for the tests: flask-websub's, on 127.0.0.1. It
subscribes to TOPIC at HUB (no secret: flask-websub sends one only to an https hub), then
prints one JSON line per event on standard output:

    {"listening": port}                         once its callback server is bound
    {"subscribed": callback_id} / {"unsubscribed": callback_id}
    {"denied": reason}
    {"notification": body as text, "topic": topic}
    {"post": path}                              each POST at the callbacks, before
                                                flask-websub looks at it

A line `unsubscribe` on standard input asks the hub to end the subscription. It serves
until killed (or standard input ends).

Usage: subscriber.py TOPIC HUB STORAGE-DIR
"""

import json
import os
import sys
import threading

from flask import Flask, request
from flask_websub.subscriber import (
    SQLite3SubscriberStorage,
    SQLite3TempSubscriberStorage,
    Subscriber,
)
from werkzeug.serving import make_server

lock = threading.Lock()


def say(**line):
    with lock:
        print(json.dumps(line), flush=True)


def main():
    topic, hub, storage = sys.argv[1], sys.argv[2], sys.argv[3]
    app = Flask(__name__)
    subscriber = Subscriber(
        SQLite3SubscriberStorage(os.path.join(storage, "subscriptions.sqlite")),
        SQLite3TempSubscriberStorage(os.path.join(storage, "temp.sqlite")),
    )
    app.register_blueprint(subscriber.build_blueprint(url_prefix="/callbacks"))

    @app.before_request
    def seen():
        # What the hub sent, whether or not flask-websub takes it (after an
        # unsubscription it answers 404 and tells its listeners nothing).
        if request.method == "POST":
            say(post=request.path)

    subscriber.add_listener(
        lambda topic, callback, body: say(notification=body.decode(), topic=topic)
    )
    subscriber.add_success_handler(
        lambda topic, callback, mode: say(**{mode + "d": callback})
    )
    subscriber.add_error_handler(lambda topic, callback, reason: say(denied=reason))
    server = make_server("127.0.0.1", 0, app, threaded=True)
    # url_for(_external=True) outside a request builds the callback URL from these.
    app.config["SERVER_NAME"] = "127.0.0.1:%d" % server.port
    app.config["PREFERRED_URL_SCHEME"] = "http"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    say(listening=server.port)
    with app.app_context():
        callback = subscriber.subscribe(topic_url=topic, hub_url=hub, lease_seconds=3600)
        for line in sys.stdin:
            if line.strip() == "unsubscribe":
                subscriber.unsubscribe(callback)


if __name__ == "__main__":
    main()
