"""A service that reflects a caller's token back, to prove nothing lets it through."""

from __future__ import annotations

import json
import re

from pytest_httpserver import HTTPServer
from werkzeug import Request, Response


def echo_headers(server: HTTPServer) -> None:
    """Answer every request with 422 and its own headers, Authorization included, as a
    service that reflects a token back in its error does."""

    def handler(request: Request) -> Response:
        headers = dict(request.headers)
        body = {"message": f"echo {headers.get('Authorization', '')}", "headers": headers}
        return Response(json.dumps(body), status=422, content_type="application/json")

    server.expect_request(re.compile(".*")).respond_with_handler(handler)
