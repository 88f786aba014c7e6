//! Tests of switching, restoring and locking against a fake sysfs tree.

use super::*;
use crate::linux::testing::FakeRoot;
use std::sync::Arc;

fn fake(current: &str, available: &str) -> (FakeRoot, Arc<SysfsClocksource>) {
    let root = FakeRoot::new();
    root.write(&format!("{CLOCKSOURCE0}/current_clocksource"), &format!("{current}\n"))
        .write(
            &format!("{CLOCKSOURCE0}/available_clocksource"),
            &format!("{available} \n"),
        );
    let c = Arc::new(SysfsClocksource::new(root.path()));
    (root, c)
}

#[test]
fn names() {
    for ok in [
        "tsc",
        "kvm-clock",
        "acpi_pm",
        "hyperv_clocksource_tsc_page",
        "arch_sys_counter",
        "a.b",
    ] {
        assert_eq!(validate_name(ok), Ok(()), "{ok}");
    }
    for bad in [
        "",
        "-tsc",
        "tsc\n",
        "ts c",
        "tsc;reboot",
        "../x",
        "t\u{e9}",
        &"x".repeat(32),
    ] {
        let e = validate_name(bad).unwrap_err();
        assert!(matches!(e, SwitchError::BadName(_)), "{bad:?}");
        assert!(!e.to_string().chars().any(char::is_control), "{e}");
    }
}

#[test]
fn plan_validates_only_names() {
    let avail: Vec<String> = ["tsc", "kvm-clock", "acpi_pm"].map(String::from).to_vec();
    assert_eq!(plan(&avail, &[]).unwrap(), avail);
    let only = ["acpi_pm", "tsc", "acpi_pm"].map(String::from).to_vec();
    assert_eq!(plan(&avail, &only).unwrap(), ["acpi_pm", "tsc"]);
    assert!(matches!(
        plan(&avail, &["hpet".into()]),
        Err(SwitchError::NotAvailable { .. })
    ));
    assert!(matches!(plan(&avail, &["tsc x".into()]), Err(SwitchError::BadName(_))));
}

#[test]
fn odd_files_are_refused() {
    let (_root, c) = fake("tsc two", "tsc");
    assert!(matches!(c.current(), Err(SwitchError::Read(_))));
    let (_root, c) = fake("tsc", "tsc bad\x1bname");
    assert!(matches!(c.available(), Err(SwitchError::Read(_))));
    let (_root, c) = fake("tsc", "tsc");
    std::fs::remove_file(c.current_path()).unwrap();
    std::os::unix::fs::symlink(c.available_path(), c.current_path()).unwrap();
    assert!(matches!(c.write("tsc"), Err(SwitchError::Write { .. })));
    assert_eq!(std::fs::read_to_string(c.available_path()).unwrap(), "tsc \n");
    assert!(matches!(c.write("a b"), Err(SwitchError::BadName(_))));
}

#[test]
fn any_number_of_names_each_once_and_plans_visit_each_once() {
    let many: Vec<String> = (0..500).map(|i| format!("cs{i}")).collect();
    let (_root, c) = fake("cs0", &format!("{} cs0 cs1 cs0", many.join(" ")));
    assert_eq!(c.available().unwrap(), many);
    let (_root, c) = fake("tsc", &["tsc"; 64].join(" "));
    assert_eq!(c.available().unwrap(), ["tsc"]);
    // A file at the read bound (64 KiB) of distinct names: accepted, in linear time.
    let full: Vec<String> = (0..10_000).map(|i| format!("c{i:04}")).collect();
    let (_root, c) = fake("c0000", &full.join(" "));
    assert_eq!(c.available().unwrap().len(), 10_000);
    let e = plan(&full, &["tsc".into()]).unwrap_err().to_string();
    assert!(e.ends_with("c0015 and 9984 more)"), "{e}");
    let dup: Vec<String> = ["tsc", "hpet", "tsc"].map(String::from).to_vec();
    assert_eq!(plan(&dup, &[]).unwrap(), ["tsc", "hpet"]);
    let (_root, c) = fake("tsc", " \n");
    assert!(c.available().unwrap_err().to_string().contains("empty"));
}

#[test]
fn one_lock_per_tree_and_the_second_is_refused_naming_the_holder() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("sys");
    std::fs::create_dir(&root).unwrap();
    let alias = dir.path().join("alias");
    std::os::unix::fs::symlink(&root, &alias).unwrap();
    let path = dir.path().canonicalize().unwrap().join(".sys.clockscope-sweep.lock");
    assert_eq!(SwitchLock::path_for(&alias).unwrap(), path);
    assert_eq!(
        SwitchLock::path_for(Path::new("/sys")).unwrap().file_name().unwrap(),
        LOCK_NAME
    );
    let held = SwitchLock::acquire(&root).unwrap();
    assert_eq!(held.path(), path);
    let e = SwitchLock::acquire(&alias).err().unwrap().to_string();
    // The holder as the kernel records it (this test process, not named
    // clockscope), never as the file's content says.
    assert!(
        e.starts_with(&format!("pid {} (", std::process::id())) && e.contains("not a clockscope sweep, holds"),
        "{e}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    }
    drop(held);
    SwitchLock::acquire(&alias).unwrap();
    assert!(SwitchLock::acquire(&dir.path().join("missing")).is_err());
}

#[test]
fn the_holder_is_read_from_proc_locks_by_device_and_inode() {
    // Device 8:1 (0x801), inode 5678; 0:45 (0x2d) for a tmpfs.
    let text = "1: FLOCK  ADVISORY  WRITE 4321 08:01:5678 0 EOF\n\
                1: -> FLOCK  ADVISORY  WRITE 999 00:2d:77 0 EOF\n\
                2: POSIX  ADVISORY  WRITE 1234 00:2d:77 0 EOF\n\
                3: FLOCK  ADVISORY  WRITE 55 103:02:77 0 EOF\n";
    assert_eq!(lock::holder_in(text, 0x801, 5678), Some(4321));
    assert_eq!(lock::holder_in(text, 0x2d, 77), Some(1234), "the waiter is skipped");
    assert_eq!(lock::holder_in(text, 0x801, 5679), None);
    // Major 259 (0x103), minor 2 in glibc's dev_t layout.
    assert_eq!(lock::holder_in(text, (0x103 << 8) | 2, 77), Some(55));
    assert_eq!(lock::holder_in("garbage\n1: FLOCK\n", 0, 0), None);
}

#[cfg(unix)]
#[test]
fn a_lock_directory_others_may_write_without_the_sticky_bit_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("sys");
    std::fs::create_dir(&root).unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let e = SwitchLock::acquire(&root).err().unwrap().to_string();
    assert!(e.contains("is writable by other users (mode 777, not sticky)"), "{e}");
    // Sticky, as /tmp: a file can only be pre-created there, and such a file is refused by its owner.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    SwitchLock::acquire(&root).unwrap();
}
