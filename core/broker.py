"""The brokers' transports: kombu's own, with two fixes.

**Redis (`redis://`, production): one client per channel.** kombu builds a new `redis.Redis` for every command it
sends outside its poll loop (each publish, each queue length, each restore of an unacknowledged message), and
redis-py 8 fills about 170 response callbacks into every new client: under `bench/payouts_e2e.py`'s profile that was a
sixth of the worker's CPU per payout. The client holds no connection of its own (each command takes one from the
channel's pool, as before), so the channel keeps the one it built for as long as its pool lives.

**Filesystem (`filesystem://`, the quick start): whole messages only.** Each message is written under a temporary
name and renamed into the queue folder when whole.

kombu creates a message's file, then locks and writes it, while its reader moves and reads files without the lock: a
read in between finds the file empty, and the worker stops on the JSON error ("Unrecoverable"). A rename within one
folder is atomic, and the reader skips names that are not `<n>_<uuid>.<queue>.msg`, so it sees a message whole or not
at all.
"""

from __future__ import annotations

import os
import uuid
from time import monotonic

from kombu.exceptions import ChannelError
from kombu.transport import filesystem, redis
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps


class Channel(filesystem.Channel):
    def _put(self, queue, payload, **kwargs):
        name = f"{round(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"  # kombu's name: the reader sorts by it
        final = os.path.join(self.data_folder_out, name)
        partial = os.path.join(self.data_folder_out, f"{name}.partial")
        try:
            with open(partial, "wb") as file:
                file.write(str_to_bytes(dumps(payload)))
            os.replace(partial, final)
        except OSError as exc:
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc


class Transport(filesystem.Transport):
    Channel = Channel


class RedisChannel(redis.Channel):
    _client_kept = None

    def _create_client(self, asynchronous=False):
        if asynchronous:  # the poll loop's client: built once by kombu itself (Channel.client)
            return super()._create_client(asynchronous=True)
        kept = self._client_kept
        if kept is None or kept.connection_pool is not self.pool:  # a pool dropped on close or error: a new client
            kept = self._client_kept = super()._create_client()
        return kept


class RedisTransport(redis.Transport):
    Channel = RedisChannel
