use std::path::{Path, PathBuf};

use crate::CoreError;

/// Where dsh keeps its sessions and settings: `$DSH_HOME`, else `~/.dsh`. A blank `DSH_HOME`
/// counts as unset, and a leading `~` is expanded (a quoted `"~/x"` in a shell script arrives
/// unexpanded).
pub fn dsh_home(dsh_home: Option<&str>, user_home: Option<&Path>) -> Result<PathBuf, CoreError> {
    match dsh_home.map(str::trim).filter(|v| !v.is_empty()) {
        Some(value) => {
            if value == "~" {
                return user_home.map(Path::to_path_buf).ok_or(CoreError::NoHome);
            }
            match value.strip_prefix("~/") {
                Some(rest) => Ok(user_home.ok_or(CoreError::NoHome)?.join(rest)),
                None => Ok(PathBuf::from(value)),
            }
        }
        None => Ok(user_home.ok_or(CoreError::NoHome)?.join(".dsh")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_dsh_home() {
        let user = Path::new("/home/u");
        assert_eq!(
            dsh_home(None, Some(user)).unwrap(),
            PathBuf::from("/home/u/.dsh")
        );
        assert_eq!(
            dsh_home(Some("  "), Some(user)).unwrap(),
            PathBuf::from("/home/u/.dsh")
        );
        assert_eq!(
            dsh_home(Some("~/x"), Some(user)).unwrap(),
            PathBuf::from("/home/u/x")
        );
        assert_eq!(
            dsh_home(Some("/srv/d"), None).unwrap(),
            PathBuf::from("/srv/d")
        );
        assert!(dsh_home(None, None).is_err());
    }
}
