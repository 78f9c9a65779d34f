//! The network allowlist's way out of the sandbox: inside the sandbox's network namespace,
//! which has nothing but loopback, a process the helper forks when it starts listens on
//! `127.0.0.1:RELAY_PORT` and relays each connection to dsh's proxy, whose Unix socket is
//! bound into the sandbox (`crate::network`). Commands are told to use it as their HTTP and
//! HTTPS proxy; they cannot reach this process otherwise (it is outside their PID namespaces,
//! not dumpable, and without capabilities).

use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::RawFd;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;

/// Starts the relay when bwrap told the helper to (`RELAY_SOCKET_VARIABLE`). The port is
/// bound before the helper says it is ready, so no command can start before it listens, nor
/// take the port first. `helper_socket`: the helper's own socket, which the relay closes.
pub(super) fn start_if_asked(helper_socket: RawFd) -> Result<(), ()> {
    let Some(socket) = std::env::var_os(crate::network::RELAY_SOCKET_VARIABLE) else {
        return Ok(());
    };
    let listener = TcpListener::bind(("127.0.0.1", crate::network::RELAY_PORT)).map_err(|_| ())?;
    // SAFETY: the helper is single-threaded here (it has not served anything yet), so the
    // child may go on running ordinary Rust code.
    match unsafe { libc::fork() } {
        -1 => Err(()),
        0 => {
            // SAFETY: prctl with integer arguments; closing the helper's socket in this copy.
            unsafe {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
                libc::close(helper_socket);
            }
            // SAFETY: prctl with integer arguments, and raw system calls on our own process.
            let dropped = unsafe {
                libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
                    && crate::caps::drop_capabilities().is_ok()
            };
            if !dropped {
                // SAFETY: leaving at once.
                unsafe { libc::_exit(1) }
            }
            relay(listener, PathBuf::from(socket));
            // SAFETY: leaving at once; the helper's own state is not ours to tear down.
            unsafe { libc::_exit(0) }
        }
        _ => Ok(()),
    }
}

fn relay(listener: TcpListener, socket: PathBuf) {
    for client in listener.incoming() {
        let Ok(client) = client else { continue };
        let socket = socket.clone();
        let _ = std::thread::Builder::new().spawn(move || {
            // No proxy, no way out: the client sees its connection closed.
            if let Ok(proxy) = UnixStream::connect(&socket) {
                splice(client, proxy);
            }
        });
    }
}

/// Copies both ways until each side has finished sending.
fn splice(client: TcpStream, proxy: UnixStream) {
    let (Ok(mut client_out), Ok(mut proxy_in)) = (client.try_clone(), proxy.try_clone()) else {
        return;
    };
    let up = std::thread::spawn(move || {
        let mut client_in = client;
        let _ = std::io::copy(&mut client_in, &mut proxy_in);
        let _ = proxy_in.shutdown(Shutdown::Write);
    });
    let mut proxy_out = proxy;
    let _ = std::io::copy(&mut proxy_out, &mut client_out);
    let _ = client_out.shutdown(Shutdown::Write);
    let _ = up.join();
}
