//! The messages between dsh and its sandbox helper, one per `SOCK_SEQPACKET` packet, and the
//! socket calls that carry them with file descriptors attached.
//!
//! The encoding is ours and private to one dsh binary talking to itself: a tag byte, then
//! fixed-width little-endian integers and length-prefixed byte strings.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// The argument that makes dsh's executable serve as a helper.
pub const HELPER_ARG: &str = "__sandbox-helper";

/// The descriptor a helper started from its sealed copy finds the copy on (after the socket's
/// 3); the helper makes it close-on-exec first thing, so no command inherits it.
pub(crate) const SEALED_FD: RawFd = 4;

/// The largest packet either side sends or accepts. A command whose request would not fit
/// (a very long script) is run the ordinary way.
pub(crate) const MAX_PACKET: usize = 192 * 1024;

/// What dsh asks of the helper.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Request {
    /// Run `argv` with exactly `env`, in `cwd`; stdin, stdout and stderr are the three
    /// descriptors attached to the packet.
    Spawn {
        id: u64,
        argv: Vec<Vec<u8>>,
        env: Vec<Vec<u8>>,
        cwd: Vec<u8>,
    },
    /// Deliver `signal` to the command's process group (SIGKILL: to its whole namespace).
    Signal { id: u64, signal: i32 },
}

/// Why a command did not start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    /// The helper could not give it its own namespaces: the helper is no use.
    Setup = 0,
    /// Its working directory could not be entered.
    Chdir = 1,
    /// Its program could not be run.
    Exec = 2,
}

/// What the helper (or a command's init) tells dsh.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reply {
    /// The helper is up, inside the sandbox.
    Ready,
    /// The command's program is running.
    Started { id: u64 },
    /// It never ran.
    Failed { id: u64, stage: Stage, errno: i32 },
    /// It ended: an exit code, or the signal that ended it.
    Ended {
        id: u64,
        code: Option<i32>,
        signal: Option<i32>,
    },
}

struct Writer(Vec<u8>);

impl Writer {
    fn u8(&mut self, v: u8) -> &mut Self {
        self.0.push(v);
        self
    }
    fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn i32(&mut self, v: i32) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn bytes(&mut self, v: &[u8]) -> &mut Self {
        self.0.extend_from_slice(&(v.len() as u32).to_le_bytes());
        self.0.extend_from_slice(v);
        self
    }
    fn list(&mut self, items: &[Vec<u8>]) -> &mut Self {
        self.0
            .extend_from_slice(&(items.len() as u32).to_le_bytes());
        for item in items {
            self.bytes(item);
        }
        self
    }
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    fn u32(&mut self) -> Option<u32> {
        self.take(4)
            .map(|b| u32::from_le_bytes(b.try_into().unwrap_or_default()))
    }
    fn u64(&mut self) -> Option<u64> {
        self.take(8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default()))
    }
    fn i32(&mut self) -> Option<i32> {
        self.take(4)
            .map(|b| i32::from_le_bytes(b.try_into().unwrap_or_default()))
    }
    fn bytes(&mut self) -> Option<Vec<u8>> {
        let len = self.u32()? as usize;
        self.take(len).map(<[u8]>::to_vec)
    }
    fn list(&mut self) -> Option<Vec<Vec<u8>>> {
        let count = self.u32()? as usize;
        // Each item takes at least its 4-byte length: a count beyond that is corrupt.
        if count > self.0.len() / 4 {
            return None;
        }
        (0..count).map(|_| self.bytes()).collect()
    }
}

impl Request {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut w = Writer(Vec::new());
        match self {
            Request::Spawn { id, argv, env, cwd } => {
                w.u8(1).u64(*id).list(argv).list(env).bytes(cwd)
            }
            Request::Signal { id, signal } => w.u8(2).u64(*id).i32(*signal),
        };
        w.0
    }

    pub(crate) fn decode(packet: &[u8]) -> Option<Request> {
        let mut r = Reader(packet);
        let request = match r.u8()? {
            1 => Request::Spawn {
                id: r.u64()?,
                argv: r.list()?,
                env: r.list()?,
                cwd: r.bytes()?,
            },
            2 => Request::Signal {
                id: r.u64()?,
                signal: r.i32()?,
            },
            _ => return None,
        };
        r.0.is_empty().then_some(request)
    }
}

impl Reply {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut w = Writer(Vec::new());
        match self {
            Reply::Ready => w.u8(1),
            Reply::Started { id } => w.u8(2).u64(*id),
            Reply::Failed { id, stage, errno } => w.u8(3).u64(*id).u8(*stage as u8).i32(*errno),
            Reply::Ended { id, code, signal } => w
                .u8(4)
                .u64(*id)
                .i32(code.unwrap_or(-1))
                .i32(signal.unwrap_or(0)),
        };
        w.0
    }

    pub(crate) fn decode(packet: &[u8]) -> Option<Reply> {
        let mut r = Reader(packet);
        let reply = match r.u8()? {
            1 => Reply::Ready,
            2 => Reply::Started { id: r.u64()? },
            3 => Reply::Failed {
                id: r.u64()?,
                stage: match r.u8()? {
                    0 => Stage::Setup,
                    1 => Stage::Chdir,
                    2 => Stage::Exec,
                    _ => return None,
                },
                errno: r.i32()?,
            },
            4 => Reply::Ended {
                id: r.u64()?,
                code: Some(r.i32()?).filter(|c| *c >= 0),
                signal: Some(r.i32()?).filter(|s| *s > 0),
            },
            _ => return None,
        };
        r.0.is_empty().then_some(reply)
    }
}

/// The most descriptors one packet carries (their control message fits [`Control`]).
const MAX_FDS: usize = 3;

/// Sends one packet with `fds` attached, waiting (in `poll`, up to 5 s) while the socket's
/// buffer is full rather than dropping a message. For the helper, which has nothing else to do.
pub(crate) fn send(
    socket: BorrowedFd<'_>,
    packet: &[u8],
    fds: &[BorrowedFd<'_>],
) -> io::Result<()> {
    loop {
        match try_send(socket, packet, fds) {
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => wait_writable(socket)?,
            done => return done,
        }
    }
}

/// A control-message buffer, aligned as `cmsghdr` must be.
struct Control {
    words: [u64; 8],
}

impl Control {
    fn new() -> Control {
        Control { words: [0; 8] }
    }
    fn as_mut_ptr(&mut self) -> *mut libc::c_void {
        self.words.as_mut_ptr().cast()
    }
    fn capacity() -> usize {
        size_of::<[u64; 8]>()
    }
}

/// Sends one packet with `fds` attached, or fails with `WouldBlock` when the socket's buffer
/// is full.
pub(crate) fn try_send(
    socket: BorrowedFd<'_>,
    packet: &[u8],
    fds: &[BorrowedFd<'_>],
) -> io::Result<()> {
    assert!(fds.len() <= MAX_FDS);
    let mut iov = libc::iovec {
        iov_base: packet.as_ptr() as *mut libc::c_void,
        iov_len: packet.len(),
    };
    let mut control = Control::new();
    // SAFETY: a zeroed msghdr is valid; every pointer set below outlives the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    if !fds.is_empty() {
        let data_len = (fds.len() * size_of::<RawFd>()) as u32;
        msg.msg_control = control.as_mut_ptr();
        // SAFETY: as above, a size only.
        msg.msg_controllen = unsafe { libc::CMSG_SPACE(data_len) } as _;
        // SAFETY: the control buffer is large enough for one header and `fds`.
        unsafe {
            let header = libc::CMSG_FIRSTHDR(&msg);
            (*header).cmsg_level = libc::SOL_SOCKET;
            (*header).cmsg_type = libc::SCM_RIGHTS;
            (*header).cmsg_len = libc::CMSG_LEN(data_len) as _;
            let data = libc::CMSG_DATA(header).cast::<RawFd>();
            for (i, fd) in fds.iter().enumerate() {
                data.add(i).write_unaligned(fd.as_raw_fd());
            }
        }
    }
    loop {
        // SAFETY: `msg` describes live buffers; MSG_NOSIGNAL: a closed peer is an error, not
        // a SIGPIPE.
        let sent = unsafe {
            libc::sendmsg(
                socket.as_raw_fd(),
                &msg,
                libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT,
            )
        };
        if sent >= 0 {
            return Ok(());
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

fn wait_writable(socket: BorrowedFd<'_>) -> io::Result<()> {
    let mut poll = libc::pollfd {
        fd: socket.as_raw_fd(),
        events: libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    match unsafe { libc::poll(&mut poll, 1, 5_000) } {
        1 => Ok(()),
        0 => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "the sandbox helper stopped reading",
        )),
        _ => {
            let error = io::Error::last_os_error();
            if error.kind() == io::ErrorKind::Interrupted {
                Ok(())
            } else {
                Err(error)
            }
        }
    }
}

/// Receives one packet into `buf` and the descriptors attached to it (close-on-exec). `Ok(None)`:
/// the peer is gone. A would-block error is returned as it is, for the caller to wait on.
pub(crate) fn recv(
    socket: BorrowedFd<'_>,
    buf: &mut [u8],
) -> io::Result<Option<(usize, Vec<OwnedFd>)>> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut control = Control::new();
    // SAFETY: a zeroed msghdr is valid; the buffers outlive the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr();
    msg.msg_controllen = Control::capacity() as _;
    let received = loop {
        // SAFETY: as above.
        let n = unsafe {
            libc::recvmsg(
                socket.as_raw_fd(),
                &mut msg,
                libc::MSG_CMSG_CLOEXEC | libc::MSG_DONTWAIT,
            )
        };
        if n >= 0 {
            break n as usize;
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    };
    let mut fds = Vec::new();
    // SAFETY: walking the control messages the kernel wrote into `control`.
    unsafe {
        let mut header = libc::CMSG_FIRSTHDR(&msg);
        while !header.is_null() {
            if (*header).cmsg_level == libc::SOL_SOCKET && (*header).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(header).cast::<RawFd>();
                let bytes = (*header).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                for i in 0..bytes / size_of::<RawFd>() {
                    fds.push(OwnedFd::from_raw_fd(data.add(i).read_unaligned()));
                }
            }
            header = libc::CMSG_NXTHDR(&msg, header);
        }
    }
    if received == 0 && fds.is_empty() {
        return Ok(None);
    }
    if msg.msg_flags & (libc::MSG_TRUNC | libc::MSG_CTRUNC) != 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "a sandbox helper message was cut short",
        ));
    }
    Ok(Some((received, fds)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_survive_the_trip() {
        let requests = [
            Request::Spawn {
                id: 7,
                argv: vec![
                    b"bash".to_vec(),
                    b"-c".to_vec(),
                    "echo é".as_bytes().to_vec(),
                ],
                env: vec![b"A=1".to_vec()],
                cwd: b"/w".to_vec(),
            },
            Request::Signal { id: 9, signal: 15 },
        ];
        for request in requests {
            assert_eq!(Request::decode(&request.encode()), Some(request));
        }
        let replies = [
            Reply::Ready,
            Reply::Started { id: 1 },
            Reply::Failed {
                id: 2,
                stage: Stage::Exec,
                errno: 2,
            },
            Reply::Ended {
                id: 3,
                code: Some(0),
                signal: None,
            },
            Reply::Ended {
                id: 4,
                code: None,
                signal: Some(9),
            },
        ];
        for reply in replies {
            assert_eq!(Reply::decode(&reply.encode()), Some(reply));
        }
        let spawn = Request::Signal { id: 1, signal: 2 }.encode();
        for cut in 0..spawn.len() {
            assert_eq!(Request::decode(&spawn[..cut]), None);
        }
        assert_eq!(
            Request::decode(&[1, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 255, 255]),
            None
        );
    }

    #[test]
    fn descriptors_ride_along() {
        let mut pair = [0; 2];
        // SAFETY: a valid array for the two new descriptors.
        let rc = unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
                0,
                pair.as_mut_ptr(),
            )
        };
        assert_eq!(rc, 0);
        // SAFETY: just created, owned here.
        let (a, b) = unsafe { (OwnedFd::from_raw_fd(pair[0]), OwnedFd::from_raw_fd(pair[1])) };
        let file = std::fs::File::open("/dev/null").unwrap();
        let fd = std::os::fd::AsFd::as_fd(&file);
        send(std::os::fd::AsFd::as_fd(&a), b"hello", &[fd, fd]).unwrap();
        let mut buf = [0u8; 64];
        let (n, fds) = recv(std::os::fd::AsFd::as_fd(&b), &mut buf)
            .unwrap()
            .unwrap();
        assert_eq!(&buf[..n], b"hello");
        assert_eq!(fds.len(), 2);
        drop(a);
        // Another test's child, between its fork and its exec, may still hold `a` for a
        // moment (close-on-exec closes it only at the exec): wait for the hang-up itself.
        let mut watched = libc::pollfd {
            fd: std::os::fd::AsRawFd::as_raw_fd(&b),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let ready = unsafe { libc::poll(&mut watched, 1, 30_000) };
        assert_eq!(ready, 1, "the peer's close was never seen");
        assert!(
            recv(std::os::fd::AsFd::as_fd(&b), &mut buf)
                .unwrap()
                .is_none()
        );
    }
}
