"""A gunicorn worker's memory after 10,000 API requests (issue 7: RSS under 150 MB).

    .venv/bin/python bench/memory.py [--requests 10000]

Own database (pagamentos_bench_memory, recreated), one sync worker, a mix of POST /payin PIX, GET /payin/{id},
GET /payin?limit=20 and GET /account over one keep-alive connection; prints the worker's RSS every quarter and exits
1 if it ends at or above 150 MB or any request failed.
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from server import HOST, PYTHON, ROOT, free_port, prepare_data, recreate_database, service_env

DATABASE = "pagamentos_bench_memory"
LIMIT_KB = 150 * 1024
BODY = json.dumps({
    "paymentMethod": "PIX", "amount": 10000, "referenceId": "memory", "payerIp": "203.0.113.9",
    "isPhysicalProduct": False, "customer": {"name": "Maria da Silva", "document": "52998224725",
                                             "email": "maria@example.com"},
    "items": [{"title": "A", "quantity": 1, "unitPrice": 10000}]})


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=10_000)
    args = parser.parse_args()
    recreate_database(DATABASE)
    env = service_env(DATABASE)
    pair = prepare_data(env)
    port = free_port()
    gunicorn = subprocess.Popen([str(PYTHON), "-m", "gunicorn", "config.wsgi:application", "--bind", f"{HOST}:{port}",
                                 "--workers", "1"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
    try:
        token = base64.b64encode(f"{pair.public_key}:{pair.secret_key}".encode()).decode()
        headers = {"Authorization": f"Basic {token}", "Content-Type": "application/json"}
        for _ in range(100):
            try:
                conn = http.client.HTTPConnection(HOST, port, timeout=30)
                conn.request("GET", "/ping")
                conn.getresponse().read()
                break
            except OSError:
                time.sleep(0.2)
        worker = int(subprocess.run(["pgrep", "-P", str(gunicorn.pid)], capture_output=True, text=True,
                                    check=True).stdout.split()[0])

        def call(method: str, path: str, body: str | None = None) -> tuple[int, bytes]:
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            return response.status, response.read()

        status, data = call("POST", "/payin", BODY)
        payin_id = json.loads(data)["id"]
        print(f"worker {worker}: RSS {rss_kb(worker) / 1024:.1f} MB before", flush=True)
        failures = 0
        paths = [("POST", "/payin", BODY), ("GET", f"/payin/{payin_id}", None), ("GET", "/payin?limit=20", None),
                 ("GET", "/account", None)]
        for number in range(1, args.requests + 1):
            status, _ = call(*paths[number % len(paths)])
            failures += status >= 400
            if number % (args.requests // 4) == 0:
                print(f"after {number:,} requests: RSS {rss_kb(worker) / 1024:.1f} MB", flush=True)
        final = rss_kb(worker)
        verdict = "PASS" if final < LIMIT_KB and not failures else "FAIL"
        print(f"{verdict}: RSS {final / 1024:.1f} MB after {args.requests:,} requests (limit 150 MB), "
              f"{failures} failed requests")
        return 0 if verdict == "PASS" else 1
    finally:
        gunicorn.terminate()
        gunicorn.wait(timeout=10)


if __name__ == "__main__":
    sys.exit(main())
