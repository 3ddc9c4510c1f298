"""The embedded broker of the quick start (`filesystem://`): kombu's filesystem transport, with each message written
under a temporary name and renamed into the queue folder when whole.

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
from kombu.transport import filesystem
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
