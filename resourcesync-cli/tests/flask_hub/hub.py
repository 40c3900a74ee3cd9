"""A third-party WebSub hub for the tests: flask-websub's, with its Celery tasks run
eagerly (no broker: each task runs in the request that queues it), publish pings allowed,
its subscriptions in an SQLite file. Prints `listening <port>` once bound, on 127.0.0.1,
then serves until killed.

Usage: hub.py STORAGE-FILE
"""

import sys

from celery import Celery
from flask import Flask
from flask_websub.hub import Hub, SQLite3HubStorage
from werkzeug.serving import make_server


def main():
    app = Flask(__name__)
    # flask-websub refuses a publish ping unless told; its verification and distribution
    # time out after 3 s.
    app.config["PUBLISH_SUPPORTED"] = True
    celery = Celery("hub")
    celery.conf.task_always_eager = True
    hub = Hub(SQLite3HubStorage(sys.argv[1]), celery, PUBLISH_SUPPORTED=True)
    app.register_blueprint(hub.build_blueprint(url_prefix="/hub"))
    server = make_server("127.0.0.1", 0, app, threaded=True)
    print("listening", server.port, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
