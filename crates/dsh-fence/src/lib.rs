//! The fence dsh writes a workspace through.
//!
//! The file tools, a checkpoint's restore and dsh's own stores write from dsh's own process,
//! which no kernel sandbox confines, while the model's commands (and anything else) may run
//! beside them. Checking a path and then writing by the same path again leaves a window: a
//! process that keeps exchanging a folder with a symlink to elsewhere (`renameat2` with
//! `RENAME_EXCHANGE`) could have a later step land outside the workspace.
//!
//! So a write reaches its folder once, as a descriptor, from a [`Root`] opened when the work
//! began, following no symlink on the way ([`Root::folder`]: `openat2` with `RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS`, or one component at a time with `O_NOFOLLOW`
//! on a kernel without `openat2`; missing folders are made one component at a time in the same
//! way). Every later step is a [`Folder`] method, relative to that descriptor (`openat` with
//! `O_CREAT|O_EXCL|O_NOFOLLOW`, `renameat2`, `unlinkat`, `symlinkat`, `linkat`, `fchmod`), so
//! whatever is swapped meanwhile, the write lands in the folder that was reached or fails.

mod beneath;
mod folder;

pub use beneath::{Root, WriteSite, write_site};
pub use folder::{Folder, c_name, met_a_link, open_at};
