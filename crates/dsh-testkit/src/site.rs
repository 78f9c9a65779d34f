//! A small web site on `127.0.0.1` for the web tools' tests: each path answers with a fixed
//! status, headers and body, after an optional delay. Requests are counted per path.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One page.
#[derive(Debug, Clone)]
pub struct Page {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub delay: Duration,
}

impl Page {
    /// A 200 with this content type and body.
    pub fn new(content_type: &str, body: impl Into<Vec<u8>>) -> Page {
        Page {
            status: 200,
            headers: vec![("Content-Type".into(), content_type.into())],
            body: body.into(),
            delay: Duration::ZERO,
        }
    }

    /// A redirect to `location`.
    pub fn redirect(status: u16, location: &str) -> Page {
        Page {
            status,
            headers: vec![("Location".into(), location.into())],
            body: Vec::new(),
            delay: Duration::ZERO,
        }
    }

    pub fn status(mut self, status: u16) -> Page {
        self.status = status;
        self
    }

    /// Answers only after `delay`.
    pub fn delayed(mut self, delay: Duration) -> Page {
        self.delay = delay;
        self
    }
}

/// The site, serving until dropped (its thread ends with the test process).
pub struct Site {
    port: u16,
    hits: Arc<Mutex<BTreeMap<String, usize>>>,
}

impl Site {
    /// Serves `pages` by path (query strings are ignored for the lookup); other paths are 404.
    pub fn start(pages: Vec<(&str, Page)>) -> Site {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let pages: Arc<BTreeMap<String, Page>> = Arc::new(
            pages
                .into_iter()
                .map(|(path, page)| (path.to_owned(), page))
                .collect(),
        );
        let hits = Arc::new(Mutex::new(BTreeMap::new()));
        let counted = hits.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let pages = pages.clone();
                let hits = counted.clone();
                std::thread::spawn(move || serve(stream, &pages, &hits));
            }
        });
        Site { port, hits }
    }

    /// `http://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// How many requests `path` got.
    pub fn hits(&self, path: &str) -> usize {
        self.hits.lock().unwrap().get(path).copied().unwrap_or(0)
    }

    pub fn port(&self) -> u16 {
        self.port
    }
}

fn serve(stream: TcpStream, pages: &BTreeMap<String, Page>, hits: &Mutex<BTreeMap<String, usize>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let target = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
            break;
        }
    }
    let path = target.split('?').next().unwrap_or("/").to_owned();
    *hits.lock().unwrap().entry(path.clone()).or_default() += 1;
    let page = pages
        .get(&path)
        .cloned()
        .unwrap_or_else(|| Page::new("text/plain", "not found").status(404));
    std::thread::sleep(page.delay);
    let mut out = stream;
    let mut head = format!(
        "HTTP/1.1 {} X\r\nContent-Length: {}\r\nConnection: close\r\n",
        page.status,
        page.body.len()
    );
    for (name, value) in &page.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let _ = out.write_all(head.as_bytes());
    let _ = out.write_all(&page.body);
}
