#!/usr/bin/env python3
"""A Remote Workers API worker: the loopback stand-in for a cluster's buildbox-worker.

It opens a bot session with the REAPI server (BuildGrid), takes one lease at a time, stages the
action's input root from CAS, runs the command, uploads the outputs and the ActionResult, and
reports the lease done. While a command runs it sends a heartbeat every second: a worker that
stops sending them (killed, machine lost) has its lease handed to another worker by the server
once the bot session expires (BuildGrid's bot-session-keepalive-timeout).

  worker.py --server grpc://127.0.0.1:PORT --name worker-0 --work-dir DIR [--instance NAME]

Files fetched from CAS are kept under DIR/cache (shared by the workers of one machine) and
hard-linked into each action's input root, so a header staged once is never downloaded again.
"""

import argparse
import hashlib
import io
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import grpc
from buildgrid._protos.build.bazel.remote.execution.v2 import remote_execution_pb2 as re_pb2
from buildgrid._protos.build.bazel.remote.execution.v2 import remote_execution_pb2_grpc as re_grpc
from buildgrid._protos.google.devtools.remoteworkers.v1test2 import bots_pb2, bots_pb2_grpc, worker_pb2
from buildgrid._protos.google.rpc import code_pb2, status_pb2
from buildgrid.server.client.cas import download, upload
from buildgrid.server.client.channel import setup_channel

HEARTBEAT_S = 1.0  # while running: well inside the server's keepalive timeout
LONG_POLL_S = 5.0  # while idle: how long one UpdateBotSession may wait for work
BATCH_BYTES = 2 << 20  # BatchReadBlobs request size; larger blobs go through ByteStream
TRANSIENT = (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.UNAVAILABLE)


def log(name, message):
    print(f"{time.strftime('%H:%M:%S')} {name}: {message}", flush=True)


def describe(command, env):
    """A test shard as "//pkg:test shard K/N", any other command as its (shortened) command line."""
    if "TEST_SHARD_INDEX" in env and "TEST_TARGET" in env:
        return f"{env['TEST_TARGET']} shard {int(env['TEST_SHARD_INDEX']) + 1}/{env.get('TEST_TOTAL_SHARDS', '?')}"
    return " ".join(command.arguments)[:120]


class Cas:
    """Input staging and output upload against the server's CAS, with a local file cache."""

    def __init__(self, channel, instance, cache_dir):
        self.channel, self.instance, self.cache_dir = channel, instance, cache_dir
        self.cas = re_grpc.ContentAddressableStorageStub(channel)
        os.makedirs(cache_dir, exist_ok=True)

    def message(self, digest, message):
        with download(self.channel, instance=self.instance) as d:
            return d.get_message(digest, message)

    def _cached(self, digest, executable):
        return os.path.join(self.cache_dir, f"{digest.hash}_{digest.size_bytes}{'x' if executable else ''}")

    def _fill_cache(self, files):
        """Downloads the files, (digest, executable) pairs, that are not in the cache yet."""
        missing = [(digest, x) for digest, x in files if not os.path.exists(self._cached(digest, x))]
        blobs = {}
        with download(self.channel, instance=self.instance) as downloader:
            batch, size = [], 0
            for digest, _ in missing + [(None, False)]:  # small blobs: BatchReadBlobs, a batch at a time
                if digest is None or size + digest.size_bytes > BATCH_BYTES:
                    if batch:
                        blobs.update((got.hash, data) for data, got in downloader.get_available_blobs(batch))
                    batch, size = [], 0
                if digest is not None and digest.size_bytes <= BATCH_BYTES:
                    batch.append(digest)
                    size += digest.size_bytes
            for digest, _ in missing:  # large blobs: ByteStream
                if digest.size_bytes > BATCH_BYTES:
                    blobs[digest.hash] = downloader.get_blob(digest)
        for digest, executable in missing:
            if blobs.get(digest.hash) is None:
                raise FileNotFoundError(f"blob {digest.hash}/{digest.size_bytes} is not in CAS")
            fd, tmp = tempfile.mkstemp(dir=self.cache_dir)
            with os.fdopen(fd, "wb") as f:
                f.write(blobs[digest.hash])
            os.chmod(tmp, 0o555 if executable else 0o444)
            os.replace(tmp, self._cached(digest, executable))  # atomic: workers share the cache

    def stage(self, root_digest, root):
        """Materializes the input root under `root`, hard-linking files from the cache."""
        directories = {}  # hash -> Directory
        request = re_pb2.GetTreeRequest(instance_name=self.instance, root_digest=root_digest)
        for response in self.cas.GetTree(request):
            for directory in response.directories:
                directories[hashlib.sha256(directory.SerializeToString()).hexdigest()] = directory
        files = []  # (path, digest, executable)

        def walk(digest, path):
            os.makedirs(path, exist_ok=True)
            directory = directories[digest.hash] if digest.size_bytes else re_pb2.Directory()
            for f in directory.files:
                files.append((os.path.join(path, f.name), f.digest, f.is_executable))
            for s in directory.symlinks:
                os.symlink(s.target, os.path.join(path, s.name))
            for d in directory.directories:
                walk(d.digest, os.path.join(path, d.name))

        walk(root_digest, root)
        unique = {(d.hash, d.size_bytes, x): (d, x) for _, d, x in files}
        self._fill_cache(list(unique.values()))
        for path, digest, executable in files:
            os.link(self._cached(digest, executable), path)

    def upload_outputs(self, command, work_dir, result):
        """Adds the outputs that exist to `result`; missing ones are left out, as REAPI allows."""
        with upload(self.channel, instance=self.instance) as u:
            outputs = list(command.output_paths) or list(command.output_files) + list(command.output_directories)
            for rel in outputs:
                path = os.path.join(work_dir, rel)
                if os.path.islink(path):
                    result.output_symlinks.add(path=rel, target=os.readlink(path))
                elif os.path.isdir(path):
                    result.output_directories.add(path=rel, tree_digest=u.upload_tree(path))
                elif os.path.isfile(path):
                    result.output_files.add(path=rel, digest=u.upload_file(path), is_executable=os.access(path, os.X_OK))
            u.flush()

    def put(self, data):
        with upload(self.channel, instance=self.instance) as u:
            return u.put_blob(io.BytesIO(data))


class Worker:
    def __init__(self, args):
        self.args = args
        channel, _ = setup_channel(args.server, server_cert=args.server_cert, client_key=args.client_key,
                                   client_cert=args.client_cert)
        self.bots = bots_pb2_grpc.BotsStub(channel)
        self.cas = Cas(channel, args.instance, os.path.join(args.work_dir, "cache"))
        self.child = None  # the running command, a process group of its own

    def new_session(self):
        device = worker_pb2.Device(handle=self.args.name, properties=[
            worker_pb2.Device.Property(key="OSFamily", value="linux")])
        session = bots_pb2.BotSession(bot_id=self.args.name, status=bots_pb2.OK,
                                      worker=worker_pb2.Worker(devices=[device]))
        request = bots_pb2.CreateBotSessionRequest(parent=self.args.instance, bot_session=session)
        return self.bots.CreateBotSession(request, timeout=LONG_POLL_S)

    def update(self, session, timeout):
        request = bots_pb2.UpdateBotSessionRequest(name=session.name, bot_session=session)
        return self.bots.UpdateBotSession(request, timeout=timeout)

    def run(self):
        session = None
        while True:
            try:
                if session is None:
                    session = self.new_session()
                    log(self.args.name, f"bot session {session.name}")
                lease = next((l for l in session.leases if l.state in (bots_pb2.PENDING, bots_pb2.ACTIVE)), None)
                if lease is None:
                    session = self.update(session, LONG_POLL_S)
                    continue
                lease.state = bots_pb2.ACTIVE
                session = self.run_lease(session, lease)
            except grpc.RpcError as e:
                if e.code() in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED):
                    continue  # a long poll that found no work
                log(self.args.name, f"server: {e.code().name} {e.details()}; new session in 1 s")
                session = None
                time.sleep(1)

    def run_lease(self, session, lease):
        """Runs `lease` to completion, heartbeating; returns the session after reporting it."""
        done = {}
        thread = threading.Thread(target=lambda: done.update(outcome=self.execute(lease)), daemon=True)
        thread.start()
        while thread.is_alive():
            thread.join(HEARTBEAT_S)
            if not thread.is_alive():
                break
            try:
                session = self.update(session, LONG_POLL_S)
            except grpc.RpcError as e:
                if e.code() in TRANSIENT:
                    continue  # the next heartbeat may get through; the session lasts 10 s
                self.kill_child()  # the session is gone, and the lease with it
                thread.join()
                raise
            if not any(l.id == lease.id for l in session.leases):  # cancelled by the server
                self.kill_child()
                thread.join()
                return session
            lease = next(l for l in session.leases if l.id == lease.id)
        status, result = done["outcome"]
        lease.state = bots_pb2.COMPLETED
        lease.status.CopyFrom(status)
        lease.result.Pack(result)
        for attempt in range(3):  # if the report never arrives, the session expires and the lease is re-run
            try:
                return self.update(session, LONG_POLL_S)
            except grpc.RpcError as e:
                if e.code() not in TRANSIENT or attempt == 2:
                    raise

    def execute(self, lease):
        """Runs one action; returns (status, ActionResult). Never raises."""
        action_root = tempfile.mkdtemp(dir=self.args.work_dir, prefix="action-")
        try:
            action = re_pb2.Action()
            if not lease.payload.Unpack(action):
                digest = re_pb2.Digest()
                lease.payload.Unpack(digest)
                action = self.cas.message(digest, re_pb2.Action())
            command = self.cas.message(action.command_digest, re_pb2.Command())
            self.cas.stage(action.input_root_digest, action_root)
            work_dir = os.path.join(action_root, command.working_directory)
            outputs = list(command.output_paths) or list(command.output_files) + list(command.output_directories)
            for rel in outputs:  # REAPI: the worker creates the outputs' parent folders
                os.makedirs(os.path.dirname(os.path.join(work_dir, rel)), exist_ok=True)
            env = {v.name: v.value for v in command.environment_variables}
            what = describe(command, env)
            log(self.args.name, f"lease {lease.id} started: {what}")
            result = re_pb2.ActionResult()
            result.execution_metadata.worker = self.args.name
            timeout = action.timeout.seconds or None
            with open(os.path.join(action_root, ".stdout"), "w+b") as out, \
                    open(os.path.join(action_root, ".stderr"), "w+b") as err:
                self.child = subprocess.Popen(list(command.arguments), cwd=work_dir, env=env, stdout=out,
                                              stderr=err, stdin=subprocess.DEVNULL, process_group=0)
                try:
                    code = self.child.wait(timeout=timeout)
                    status = status_pb2.Status(code=code_pb2.OK)
                except subprocess.TimeoutExpired:
                    self.kill_child()
                    code = self.child.wait()
                    status = status_pb2.Status(code=code_pb2.DEADLINE_EXCEEDED,
                                               message=f"action timed out after {timeout} s")
                self.child = None
                result.exit_code = code if code >= 0 else 128 - code
                out.seek(0)
                err.seek(0)
                result.stdout_digest.CopyFrom(self.cas.put(out.read()))
                result.stderr_digest.CopyFrom(self.cas.put(err.read()))
            self.cas.upload_outputs(command, work_dir, result)
            log(self.args.name, f"lease {lease.id} finished: {what}: exit {result.exit_code}")
            return status, result
        except Exception as e:  # reported to the client as the action's status
            log(self.args.name, f"lease {lease.id}: {type(e).__name__}: {e}")
            return status_pb2.Status(code=code_pb2.INTERNAL, message=f"worker {self.args.name}: {e}"), \
                re_pb2.ActionResult()
        finally:
            shutil.rmtree(action_root, ignore_errors=True)

    def kill_child(self):
        child = self.child
        if child is not None and child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)

    def stop(self, *_):
        self.kill_child()
        sys.exit(0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--server", required=True, help="grpc://HOST:PORT or grpcs://HOST:PORT")
    parser.add_argument("--instance", default="", help="REAPI instance name")
    parser.add_argument("--name", required=True, help="bot id, unique per worker")
    parser.add_argument("--work-dir", required=True, help="folder for the action roots and the CAS cache")
    parser.add_argument("--server-cert", help="TLS: server certificate chain (grpcs://)")
    parser.add_argument("--client-key", help="TLS: client key")
    parser.add_argument("--client-cert", help="TLS: client certificate")
    args = parser.parse_args()
    os.makedirs(args.work_dir, exist_ok=True)
    worker = Worker(args)
    signal.signal(signal.SIGTERM, worker.stop)
    signal.signal(signal.SIGINT, worker.stop)
    log(args.name, f"serving {args.server} instance '{args.instance}'")
    worker.run()


if __name__ == "__main__":
    main()
