#!/usr/bin/env bash
# WebDataset shards served by nginx on a loopback port (label nginx, make test-all; exit 77 without
# nginx): a run reading http:// shards ends with the weights of the same run on the local files;
# nginx stopped and started again mid-epoch loses and repeats nothing (the same weights again, and
# the reads that broke were retried); a shard that answers 404 is a one-line error, exit 2; predict
# on image files with the webdataset recipe; the shards' indexes are kept (index_cache): a second run
# asks HEAD and reads ranges only, and a corrupt kept index is said and rebuilt.
# Usage: webdataset_nginx_test.sh BATON_BINARY
set -uo pipefail
baton=$1
nginx=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$nginx" ] || { echo "nginx is not installed (Debian's nginx package: scripts/install-deps.sh --servers)"; exit 77; }
source "$(dirname "$0")/../common/lib.sh"
cd "$tmp" || exit 1
stop_nginx() { [ -f nginx/nginx.pid ] && kill -TERM "$(cat nginx/nginx.pid)" 2>/dev/null; sleep 0.3; }
trap 'stop_nginx; rm -rf "$tmp"' EXIT

# Three shards of 24x24 RGB PNG samples (dark or light, two classes), written by Python's tarfile
# (pax headers: some keys are longer than a ustar name); images for predict beside them.
/usr/bin/python3 - <<'PY'
import io, os, random, struct, tarfile, zlib
def png(rows):
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)
    raw = b"".join(b"\x00" + bytes(v for px in r for v in px) for r in rows)
    ihdr = struct.pack(">IIBBBBB", len(rows[0]), len(rows), 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
def picture(label):
    base = 50 + 120 * label
    return png([[(random.randrange(base, base + 80), random.randrange(256), x * 10) for x in range(24)] for _ in range(24)])
random.seed(3)
os.makedirs("www", exist_ok=True)
os.makedirs("predict", exist_ok=True)
for s in range(3):
    with tarfile.open(f"www/train-{s:06d}.tar", "w") as tar:
        for i in range(120):
            label = random.randrange(2)
            key = f"sample{s}_{i:04d}" + ("_" + "x" * 120 if i % 7 == 0 else "")
            for ext, data in (("png", picture(label)), ("cls", str(label).encode()), ("json", b"{}")):
                info = tarfile.TarInfo(f"{key}.{ext}")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
for i, label in enumerate((0, 1, 1)):
    with open(f"predict/{i}.png", "wb") as f:
        f.write(picture(label))
PY
[ -f www/train-000002.tar ] || { echo "FAIL: the shards were not written"; exit 1; }
port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p nginx
user=""  # as root, the workers would run as nobody, who cannot read mktemp's folder
[ "$(id -u)" -eq 0 ] && user="user $(id -un) $(id -gn);"
cat >nginx/nginx.conf <<CONF
$user
daemon on;
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/error.log;
events {}
http {
  log_format requests '\$request_method \$status range=\$http_range';
  access_log $tmp/nginx/access.log requests;
  client_body_temp_path $tmp/nginx/body;
  proxy_temp_path $tmp/nginx/proxy;
  fastcgi_temp_path $tmp/nginx/fastcgi;
  uwsgi_temp_path $tmp/nginx/uwsgi;
  scgi_temp_path $tmp/nginx/scgi;
  server { listen 127.0.0.1:$port; root $tmp/www; }
}
CONF
start_nginx() {
  "$nginx" -p "$tmp/nginx" -c "$tmp/nginx/nginx.conf" 2>>nginx/start.log || return 1
  for _ in $(seq 50); do [ -s nginx/nginx.pid ] && return 0; sleep 0.1; done
  return 1
}
start_nginx || { echo "FAIL: nginx did not start: $(tail -3 nginx/start.log nginx/error.log 2>/dev/null)"; exit 1; }

recipe() {  # recipe NAME SHARDS: 60 epochs (about 8 s) over 360 samples, chunks of 16 samples
  cat >"$1.yaml" <<YAML
max_duration: 60ep
seed: 11
progress_bar: false
model: {name: fashion_cnn}
optimizer: {name: sgd, lr: 0.05, momentum: 0.9}
data: {dataset: webdataset, train_shards: "$2", shuffle_buffer: 16, channels: 3, image_size: 20, batch_size: 12,
       workers: 2, retry_seconds: 60, index_cache: $tmp/index, train_transforms: [{random_resized_crop: {scale: [0.5, 1.0]}}, horizontal_flip]}
YAML
}
sha() { "$baton" checkpoint inspect "$1/checkpoints/latest" --json 2>/dev/null | /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)['weights_sha256'])" 2>/dev/null; }

recipe local "www/train-{000000..000002}.tar"
recipe http "http://127.0.0.1:$port/train-{000000..000002}.tar"
"$baton" train local.yaml --run-dir run_local >local.log 2>&1 || { fail "train on local shards"; tail -5 local.log; }
"$baton" train http.yaml --run-dir run_http >http.log 2>&1 || { fail "train on http shards"; tail -5 http.log; }
expected=$(sha run_local)
[ -n "$expected" ] && [ "$(sha run_http)" = "$expected" ] || fail "http shards: the weights differ from the local shards' run"

# The shards' indexes were kept: a second run asks HEAD and reads ranges, never a whole shard.
[ "$(ls index/*.json 2>/dev/null | wc -l)" -eq 3 ] || fail "index_cache: $(ls index 2>&1) (want 3 kept indexes)"
[ "$(grep -c '^GET 200 range=-$' nginx/access.log)" -eq 3 ] || fail "the first run's whole-shard reads: $(grep -c '^GET 200' nginx/access.log), want 3"
: >nginx/access.log
"$nginx" -p "$tmp/nginx" -c "$tmp/nginx/nginx.conf" -s reopen 2>/dev/null

# nginx stopped mid-epoch and started again 3 s later: the reads are retried, nothing lost or repeated.
"$baton" train http.yaml --run-dir run_restart >restart.log 2>&1 &
trainer=$!
for _ in $(seq 100); do grep -q "\[ba=" restart.log 2>/dev/null && break; sleep 0.1; done
sleep 0.5
stop_nginx
sleep 3
start_nginx || fail "nginx did not start again"
wait "$trainer" || { fail "the run with nginx restarted mid-epoch"; tail -5 restart.log; }
grep -q '^GET 200 range=-$' nginx/access.log && fail "a run with the indexes kept read whole shards again"
grep -q '^HEAD 200' nginx/access.log || fail "a run with the indexes kept asked no HEAD: $(head -3 nginx/access.log)"
grep -q "retrying" restart.log || fail "nginx's restart hit no read (nothing was retried): $(tail -3 restart.log)"
[ "$(sha run_restart)" = "$expected" ] || fail "nginx restarted mid-epoch: the weights differ (an example lost or repeated)"

# A shard that is not there: HTTP 404, exit 2, the URL named, nothing trained.
recipe missing "http://127.0.0.1:$port/train-{000000..000003}.tar"
"$baton" train missing.yaml --run-dir run_missing >missing.log 2>&1
rc=$?
[ "$rc" -eq 2 ] || fail "a 404 shard: exit $rc, want 2"
grep -q "train-000003.tar: HTTP 404 (not found)" missing.log || fail "a 404 shard: $(tail -2 missing.log)"
[ "$(wc -l <missing.log)" -le 2 ] || fail "a 404 shard: more than a line: $(cat missing.log)"
[ ! -e run_missing/checkpoints ] || fail "a 404 shard: checkpoints written"

# Predict on image files with the webdataset recipe: a class a file. One kept index is corrupt: it
# is said, and the shard indexed again.
kept=$(ls index/*.json | head -1)
printf '{"format": 1, "url"' >"$kept"
"$baton" predict http.yaml --load run_http/model.pt --inputs predict --out p.npy >predict.log 2>&1 || fail "predict: $(tail -2 predict.log)"
[ "$(grep -c 'predict/.\.png: [01] (' predict.log)" -eq 3 ] || fail "predict: $(cat predict.log)"
grep -qE "the kept index of .* (does not read|is not one this baton wrote)" predict.log || fail "a corrupt kept index was not said: $(head -3 predict.log)"
/usr/bin/python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$kept" || fail "the corrupt kept index was not written again"

[ "$failures" -eq 0 ] && echo "webdataset over nginx: ok"
exit $((failures > 0))
