#!/usr/bin/env python3
"""A credit-scoring service in plain Python that Harvest workflows call as HTTP activities.

Standard library only. It shows both ways a service outside Go takes part in a
durable workflow (see harvest.NewHTTPActivity):

POST /score   synchronous. Harvest POSTs the activity's input as JSON with an
              Idempotency-Key header that is the same on every attempt of the
              activity. The service scores the applicant once per key: a repeat
              of a key answers the stored result and makes no second effect.
              With --lose-first-answer the first request of each key makes its
              effect and then answers 503, as if the answer had been lost on the
              way back; Harvest retries with the same key and gets the stored
              result, so the applicant is still scored exactly once.

POST /review  asynchronous. Harvest also sends the attempt's task token in the
              Harvest-Task-Token header. The service answers 202 ("I will
              finish later") at once, reviews the application on a background
              thread, then completes the attempt with
              POST {harvest}/api/harvest/activities/complete (the token in the
              Harvest-Task-Token header, {"output": ...} as the body). The token
              is the credential of that route: no API token is needed.

GET /effects  what the service has done, for tests and the curious: effects
              per route and Idempotency-Key, the attempts seen per key, and each
              completion sent to Harvest with Harvest's answer.

It binds --port (0: any free port) and prints one line on stdout,
"listening on http://HOST:PORT", once it accepts requests.
"""

import argparse
import hashlib
import json
import os
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TASK_TOKEN_HEADER = "Harvest-Task-Token"

# Answers of Harvest's completion route worth retrying: the request may not
# have been served. Anything else (401, 409 stale_attempt or
# execution_terminal...) is final; the token's attempt is then retried by
# Harvest itself once it times out.
RETRYABLE_STATUSES = {408, 429, 500, 502, 503, 504}


class Ledger:
    """The service's state: stored answers and effects per Idempotency-Key.

    One lock guards it all. Effects here are instant in-memory updates, so
    holding the lock while making one keeps "check the key, make the effect,
    store the answer" atomic: two concurrent requests with one key cannot
    both make the effect.
    """

    def __init__(self):
        self.lock = threading.Lock()
        self.answers = {"score": {}, "review": {}}  # route -> key -> stored answer
        self.effects = {"score": {}, "review": {}}  # route -> key -> effects made
        self.attempts = {"score": {}, "review": {}}  # route -> key -> Harvest-Attempt values seen
        self.completions = []  # completions sent to Harvest, with its answers
        self.sequence = 0

    def once(self, route, key, attempt, effect):
        """Returns (answer, requests): the stored answer of key, made by
        effect(sequence) on the key's first request only, and how many
        requests with key the route has had, this one included."""
        with self.lock:
            seen = self.attempts[route].setdefault(key, [])
            seen.append(attempt)
            if key in self.answers[route]:
                return self.answers[route][key], len(seen)
            self.sequence += 1
            answer = effect(self.sequence)
            self.answers[route][key] = answer
            self.effects[route][key] = self.effects[route].get(key, 0) + 1
            return answer, len(seen)

    def record_completion(self, completion):
        with self.lock:
            self.completions.append(completion)

    def snapshot(self):
        with self.lock:
            return json.loads(json.dumps({
                "effects": self.effects,
                "attempts": self.attempts,
                "answers": self.answers,
                "completions": self.completions,
            }))


def credit_score(applicant):
    """A deterministic score in 300..850 (a stand-in for a real model)."""
    digest = hashlib.sha256(applicant.encode("utf-8")).digest()
    return 300 + int.from_bytes(digest[:4], "big") % 551


def decide(score, amount_cents):
    """The decision on an application (a stand-in for a person or a model):
    good scores are approved up to 50,000.00, anything else goes to a person."""
    if score >= 600 and amount_cents <= 5_000_000:
        return "approved"
    return "referred"


def json_or_text(raw):
    """raw decoded as JSON, or as text when it is not JSON."""
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")


def is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


class Handler(BaseHTTPRequestHandler):
    server_version = "scoring-server/1"
    protocol_version = "HTTP/1.1"

    # --- routes ----------------------------------------------------------

    def do_GET(self):
        if self.path == "/effects":
            self.send_json(200, self.server.ledger.snapshot())
        elif self.path == "/healthz":
            self.send_json(200, {"ok": True})
        else:
            self.send_json(404, {"error": "no route " + self.path})

    def do_POST(self):
        routes = {"/score": self.score, "/review": self.review}
        route = routes.get(self.path)
        if route is None:
            self.read_body()
            self.send_json(404, {"error": "no route " + self.path})
            return
        body = self.read_body()
        try:
            application = json.loads(body or b"null")
        except ValueError:
            self.send_json(400, {"error": "the body is not JSON"})
            return
        key = self.headers.get("Idempotency-Key")
        if not key:
            # A client that sends no key cannot be deduplicated: refuse (a 4xx
            # fails the activity for good rather than charging twice).
            self.send_json(400, {"error": "an Idempotency-Key header is required"})
            return
        if not isinstance(application, dict):
            self.send_json(400, {"error": "want a JSON object"})
            return
        route(application, key, self.headers.get("Harvest-Attempt", ""))

    def score(self, application, key, attempt):
        applicant = str(application.get("applicant", ""))

        def effect(seq):
            return {"score_id": "score-%d" % seq, "applicant": applicant, "score": credit_score(applicant)}

        answer, requests = self.server.ledger.once("score", key, attempt, effect)
        if requests == 1 and self.server.lose_first_answer:
            # The effect is made and stored; only the answer is "lost".
            self.send_json(503, {"error": "simulated: the answer was lost"})
            return
        self.send_json(200, answer)

    def review(self, application, key, attempt):
        token = self.headers.get(TASK_TOKEN_HEADER)
        if not token:
            self.send_json(400, {"error": "an async activity sends " + TASK_TOKEN_HEADER})
            return

        score, amount_cents = application.get("score"), application.get("amount_cents", 0)
        if not is_int(score) or not is_int(amount_cents):
            self.send_json(400, {"error": "want an integer score and amount_cents"})
            return

        # "I will finish later": the review runs on a thread of its own, and
        # Harvest keeps the attempt open until the token completes it.
        self.send_json(202, {"status": "accepted"})
        threading.Thread(target=self.server.review_later, args=(token, key, attempt, score, amount_cents),
                         daemon=True).start()

    # --- plumbing --------------------------------------------------------

    def read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def send_json(self, status, value):
        body = json.dumps(value).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args):
        # One line per request on stderr; never the headers (they carry tokens).
        sys.stderr.write("scoring_server: %s %s\n" % (self.address_string(), format % args))


class ScoringServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address, harvest_url, lose_first_answer):
        super().__init__(address, Handler)
        self.ledger = Ledger()
        self.harvest_url = harvest_url.rstrip("/")
        self.lose_first_answer = lose_first_answer

    def review_later(self, token, key, attempt, score, amount_cents):
        """Reviews an application, then completes the attempt with the
        decision. A repeat of the key (a later attempt, after Harvest timed
        out an earlier one) reviews nothing again: it completes its own
        attempt, with its own token, with the stored decision."""

        def effect(seq):
            return {"review_id": "review-%d" % seq, "decision": decide(score, amount_cents), "reviewer": "python"}

        decision, _ = self.ledger.once("review", key, attempt, effect)
        self.complete(token, key, attempt, decision)

    def complete(self, token, key, attempt, output, tries=8):
        """Completes an async attempt with output, retrying transient failures
        with a doubling pause. A repeat of the same completion is harmless:
        Harvest answers it 200 with "duplicate": true."""
        url = self.harvest_url + "/api/harvest/activities/complete"
        body = json.dumps({"output": output}).encode("utf-8")
        pause = 0.1
        for n in range(1, tries + 1):
            request = urllib.request.Request(url, data=body, method="POST", headers={
                "Content-Type": "application/json",
                TASK_TOKEN_HEADER: token,
            })
            try:
                with urllib.request.urlopen(request, timeout=10) as response:
                    status, answer = response.status, json.load(response)
            except urllib.error.HTTPError as e:
                status, answer = e.code, json_or_text(e.read())
            except (urllib.error.URLError, OSError) as e:
                status, answer = 0, str(e)
            retryable = status == 0 or status in RETRYABLE_STATUSES  # 0: no answer at all
            if not retryable:
                break
            if n < tries:
                time.sleep(pause)
                pause = min(pause * 2, 5.0)
        self.ledger.record_completion({"key": key, "attempt": attempt, "status": status, "answer": answer})
        sys.stderr.write("scoring_server: completed %s attempt %s: %s\n" % (key, attempt, status))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=int(os.environ.get("SCORING_PORT", "8090")),
                        help="port to bind, 0 for any free one (default $SCORING_PORT or 8090)")
    parser.add_argument("--harvest-url", default=os.environ.get("HARVEST_URL", "http://127.0.0.1:7233"),
                        help="Harvest's base URL, for async completions (default $HARVEST_URL or http://127.0.0.1:7233)")
    parser.add_argument("--lose-first-answer", action="store_true",
                        help="answer 503 to the first /score request of each key, after making its effect")
    args = parser.parse_args()

    server = ScoringServer((args.host, args.port), args.harvest_url, args.lose_first_answer)
    host, port = server.server_address[:2]
    print("listening on http://%s:%d" % (host, port), flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
