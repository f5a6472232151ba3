"""A filesystem that loses power: every write not yet synced is gone when it stops.

    python3 power-loss-fs.py BACKING MOUNTPOINT

Mounts MOUNTPOINT (FUSE, through Debian's python3-fusepy) as a view of the
folder BACKING: every operation passes through to BACKING at once, and each
file keeps an undo log of its writes and truncations since its last fsync
or fdatasync. When the filesystem stops (SIGTERM, or `umount`), it undoes,
newest first, every change that was never synced, leaving in BACKING what a
disk would hold after a power cut that came at that moment: the files as of
their last sync. Names (files made, renamed, removed) are kept as they are:
only file contents are lost, which is what a program's fsync is for.

It prints "mounted" once the mount answers, and "reverted N writes" at the end.
"""

import errno
import os
import sys
import threading

from fusepy import FUSE, FuseOSError, Operations


class PowerLossFs(Operations):
    def __init__(self, backing):
        self.backing = os.path.realpath(backing)
        # Real path -> [(offset, bytes before, size before)], oldest first, since its last sync.
        self.undo = {}
        self.guard = threading.Lock()

    def _real(self, path):
        return os.path.join(self.backing, path.lstrip('/'))

    def _remember(self, real, fd, offset, length):
        """Keeps what [offset, offset + length) and the size were before a change."""
        size = os.fstat(fd).st_size
        before = os.pread(fd, max(0, min(length, size - offset)), offset) if offset < size else b''
        self.undo.setdefault(real, []).append((offset, before, size))

    def revert(self):
        reverted = 0
        for real, changes in self.undo.items():
            try:
                fd = os.open(real, os.O_WRONLY)
            except FileNotFoundError:
                continue
            try:
                for offset, before, size in reversed(changes):
                    os.pwrite(fd, before, offset)
                    os.ftruncate(fd, size)
                    reverted += 1
                os.fsync(fd)
            finally:
                os.close(fd)
        self.undo.clear()
        return reverted

    # Files

    def create(self, path, mode, fi=None):
        real = self._real(path)
        with self.guard:
            existed = os.path.exists(real)
            fd = os.open(real, os.O_RDWR | os.O_CREAT, mode)
            if not existed:
                # A file made and never synced holds nothing after the cut.
                self.undo.setdefault(real, []).append((0, b'', 0))
            return fd

    def open(self, path, flags):
        real = self._real(path)
        # Opened to read as well, so that what a write replaces can be read first.
        writes = flags & os.O_ACCMODE != os.O_RDONLY
        with self.guard:
            fd = os.open(real, (flags & ~(os.O_ACCMODE | os.O_APPEND | os.O_TRUNC)) | (os.O_RDWR if writes else os.O_RDONLY))
            if writes and flags & os.O_TRUNC:
                self._remember(real, fd, 0, os.fstat(fd).st_size)
                os.ftruncate(fd, 0)
            return fd

    def read(self, path, size, offset, fh):
        return os.pread(fh, size, offset)

    def write(self, path, data, offset, fh):
        with self.guard:
            self._remember(self._real(path), fh, offset, len(data))
            return os.pwrite(fh, data, offset)

    def truncate(self, path, length, fh=None):
        real = self._real(path)
        with self.guard:
            fd = fh if fh is not None else os.open(real, os.O_RDWR)
            try:
                self._remember(real, fd, length, max(0, os.fstat(fd).st_size - length))
                os.ftruncate(fd, length)
            finally:
                if fh is None:
                    os.close(fd)

    def fsync(self, path, datasync, fh):
        with self.guard:
            os.fsync(fh)
            self.undo.pop(self._real(path), None)

    def flush(self, path, fh):
        return 0

    def release(self, path, fh):
        os.close(fh)

    # Names and attributes: passed through, never lost.

    def getattr(self, path, fh=None):
        st = os.lstat(self._real(path))
        keys = ('st_atime', 'st_ctime', 'st_gid', 'st_mode', 'st_mtime', 'st_nlink', 'st_size', 'st_uid', 'st_blocks')
        return {key: getattr(st, key) for key in keys}

    def access(self, path, amode):
        if not os.access(self._real(path), amode):
            raise FuseOSError(errno.EACCES)

    def readdir(self, path, fh):
        return ['.', '..'] + os.listdir(self._real(path))

    def mkdir(self, path, mode):
        os.mkdir(self._real(path), mode)

    def rmdir(self, path):
        os.rmdir(self._real(path))

    def unlink(self, path):
        real = self._real(path)
        with self.guard:
            os.unlink(real)
            self.undo.pop(real, None)

    def rename(self, old, new):
        with self.guard:
            os.rename(self._real(old), self._real(new))
            if self._real(old) in self.undo:
                self.undo[self._real(new)] = self.undo.pop(self._real(old))

    def chmod(self, path, mode):
        os.chmod(self._real(path), mode)

    def chown(self, path, uid, gid):
        os.chown(self._real(path), uid, gid)

    def utimens(self, path, times=None):
        os.utime(self._real(path), times)

    def statfs(self, path):
        st = os.statvfs(self._real(path))
        keys = ('f_bavail', 'f_bfree', 'f_blocks', 'f_bsize', 'f_favail', 'f_ffree', 'f_files', 'f_flag', 'f_frsize', 'f_namemax')
        return {key: getattr(st, key) for key in keys}

    def fsyncdir(self, path, datasync, fh):
        return 0


def main():
    backing, mountpoint = sys.argv[1], sys.argv[2]
    fs = PowerLossFs(backing)

    def say_mounted():
        # The mount answers once the kernel sees it: a stat of the mountpoint then differs from its parent's device.
        parent = os.stat(os.path.dirname(os.path.abspath(mountpoint))).st_dev
        while os.stat(mountpoint).st_dev == parent:
            threading.Event().wait(0.01)
        print('mounted', flush=True)

    threading.Thread(target=say_mounted, daemon=True).start()
    FUSE(fs, mountpoint, foreground=True, nothreads=False)
    print(f'reverted {fs.revert()} writes', flush=True)


if __name__ == '__main__':
    main()
