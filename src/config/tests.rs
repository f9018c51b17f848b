//! The configuration's parsing, overrides, validation and error positions.

use super::*;

/// Found by fuzzing: a way (assoc * line_bytes) past 2^64 bytes overflowed.
#[test]
fn huge_assoc_is_an_error_at_its_key() {
    let text = "[l1]\nassoc = 288230376151711744\n";
    let e = SystemConfig::from_toml_str(text, "c.toml").unwrap_err();
    assert_eq!(
        e.to_string(),
        "c.toml:2:1: key `l1.assoc`: 288230376151711744 ways of 64 bytes exceed 2^64 bytes"
    );
}

/// Found by fuzzing: a section written as a date-time named TOML's private key.
#[test]
fn section_as_date_time_is_named() {
    let text = "directory = 1979-05-27\n";
    let e = SystemConfig::from_toml_str(text, "c.toml").unwrap_err();
    assert_eq!(
        e.to_string(),
        "c.toml:1:1: key `directory`: expected a table (`[directory]` with one `name = value` \
         a line, or `directory = { name = value, ... }`), found a datetime"
    );
    let mut cfg = SystemConfig::default();
    let e = cfg.set("directory", "1979-05-27").unwrap_err();
    assert_eq!(e.key_path, "directory");
    assert!(!e.msg.contains("private"), "{e}");
}

/// Found by fuzzing: a carriage return without its line feed gave an empty message.
#[test]
fn lone_carriage_return_is_named() {
    let e = SystemConfig::from_toml_str("# generated\r\r\n", "c.toml").unwrap_err();
    assert_eq!(
        e.to_string(),
        "c.toml:1:12: expected a line feed after the carriage return"
    );
}

#[test]
fn defaults_are_table_1() {
    let c = SystemConfig::default();
    assert_eq!(c.system.cores, 16);
    assert_eq!(c.system.core_ghz, 1.0);
    assert_eq!(c.system.line_bytes, 64);
    assert_eq!(
        (c.l1.size_bytes, c.l1.assoc, c.l1.latency),
        (32 * 1024, 4, 1)
    );
    assert_eq!(
        (c.l2.size_bytes, c.l2.assoc, c.l2.latency),
        (512 * 1024, 8, 10)
    );
    assert_eq!(c.memory.size_bytes, 512 << 20);
    assert_eq!(c.memory.latency, 35);
    assert_eq!(c.network.topology, "hierarchical_switch");
    assert_eq!(c.network.net_mhz, 500.0);
    assert_eq!(c.moped.ops_per_cycle, 2);
    assert_eq!((c.moped.copy_send_lines, c.moped.copy_recv_lines), (4, 4));
    assert_eq!(c.moped.descriptor_entries, 64);
    assert_eq!(c.moped.active_matches, 1);
    assert_eq!(c.l1_sets(), 128);
    assert_eq!(c.l2_sets(), 1024);
    c.validate().unwrap();
    assert_eq!(SystemConfig::from_toml_str("", "e.toml").unwrap(), c);
}

#[test]
fn round_trip() {
    let mut c = SystemConfig::default();
    c.l2.latency = 12;
    c.system.cores = 32;
    c.network.net_mhz = 750.5;
    let text = c.to_toml_string();
    assert_eq!(SystemConfig::from_toml_str(&text, "rt.toml").unwrap(), c);
    let d = SystemConfig::default();
    assert_eq!(
        SystemConfig::from_toml_str(&d.to_toml_string(), "d").unwrap(),
        d
    );
}

#[test]
fn partial_sections_keep_level_defaults() {
    let c = SystemConfig::from_toml_str("[l2]\nassoc = 16\n[l1]\nlatency = 2\n", "p").unwrap();
    assert_eq!(c.l2.size_bytes, 512 * 1024);
    assert_eq!(c.l2.assoc, 16);
    assert_eq!(c.l2.latency, 10);
    assert_eq!(c.l1.size_bytes, 32 * 1024);
    assert_eq!(c.l1.latency, 2);
    let c = SystemConfig::from_toml_str("l2 = { latency = 20 }\n", "p").unwrap();
    assert_eq!(c.l2.assoc, 8);
    assert_eq!(c.l2.latency, 20);
}

#[test]
fn unknown_key_message() {
    let e = SystemConfig::from_toml_str("[l2]\nasoc = 4\n", "cfg.toml").unwrap_err();
    assert_eq!(
        e.to_string(),
        "cfg.toml:2:1: key `l2.asoc`: unknown field `asoc`, expected one of size_bytes, assoc, latency"
    );
}

#[test]
fn wrong_type_message() {
    let e = SystemConfig::from_toml_str("[l2]\nassoc = \"x\"\n", "cfg.toml").unwrap_err();
    assert_eq!(e.key_path, "l2.assoc");
    assert_eq!(e.line, Some(2));
    assert!(
        e.msg
            .contains("expected an integer from 0 to 9223372036854775807"),
        "{e}"
    );
}

#[test]
fn page_table_format_is_a_choice_bounding_memory() {
    let c = SystemConfig::from_toml_str("[os]\npage_table = \"x86_32\"\n", "p.toml").unwrap();
    assert_eq!(c.os.page_table, PageTableFormat::X86_32);
    let e = SystemConfig::from_toml_str("[os]\npage_table = \"pae\"\n", "p.toml").unwrap_err();
    assert_eq!(e.key_path, "os.page_table");
    assert!(e.msg.contains("expected `x86_32` or `x86_64`"), "{e}");
    let big = "[os]\npage_table = \"x86_32\"\n[memory]\nsize_bytes = 8589934592\n";
    let e = SystemConfig::from_toml_str(big, "p.toml").unwrap_err();
    assert_eq!(e.key_path, "memory.size_bytes");
    assert!(e.msg.contains("at most 4294967296 (4 GiB)"), "{e}");
    let four = big.replace("8589934592", "4294967296");
    SystemConfig::from_toml_str(&four, "p.toml").unwrap();
    let wide = big.replace("x86_32", "x86_64");
    SystemConfig::from_toml_str(&wide, "p.toml").unwrap();
}

#[test]
fn buffer_align_is_a_power_of_two_up_to_the_page() {
    let mut c = SystemConfig::default();
    assert_eq!(c.workload.buffer_align, 16);
    c.set("workload.buffer_align", "4096").unwrap();
    c.validate().unwrap();
    for bad in ["48", "0", "8192"] {
        c.set("workload.buffer_align", bad).unwrap();
        let e = c.validate().unwrap_err();
        assert_eq!(e.key_path, "workload.buffer_align");
        assert!(
            e.msg
                .contains("power of two from 1 to the page size (4096)"),
            "{e}"
        );
    }
}

/// Issue 25: the layout's two choices name their key and the values they take.
#[test]
fn layout_choices_name_their_values() {
    let c = SystemConfig::default();
    assert_eq!(c.os.frame_order, FrameOrder::Random);
    assert_eq!(c.mpi.queue_stride, QueueStride::Mpich);
    let old = "[os]\nframe_order = \"address\"\n[mpi]\nqueue_stride = \"page\"\n";
    let old = SystemConfig::from_toml_str(old, "old.toml").unwrap();
    assert_eq!(old.os.frame_order, FrameOrder::Address);
    assert_eq!(old.mpi.queue_stride, QueueStride::Page);
    let e = SystemConfig::from_toml_str("[os]\nframe_order = \"sorted\"\n", "o.toml").unwrap_err();
    assert_eq!(
        e.to_string(),
        "o.toml:2:15: key `os.frame_order`: unknown variant `sorted`, expected `random` or \
         `address`"
    );
    let table1 = include_str!("../../configs/table1.toml");
    assert_eq!(
        SystemConfig::from_toml_str(table1, "table1.toml").unwrap(),
        SystemConfig::default()
    );
    let mut c = SystemConfig::default();
    let e = c.set("mpi.queue_stride", "pages").unwrap_err();
    assert_eq!(
        e.to_string(),
        "key `mpi.queue_stride`: unknown variant `pages`, expected `mpich` or `page`"
    );
}

#[test]
fn validation_is_located() {
    let e = SystemConfig::from_toml_str("# x\n[l1]\n  assoc = 3\n", "v.toml").unwrap_err();
    assert_eq!(e.key_path, "l1.size_bytes");
    // l1.size_bytes is not in the file: points at the [l1] header.
    assert_eq!((e.line, e.col), (Some(2), Some(1)));
    let e = SystemConfig::from_toml_str("[memory]\n  latency = 0\n", "v.toml").unwrap_err();
    assert_eq!(e.key_path, "memory.latency");
    assert_eq!((e.line, e.col), (Some(2), Some(3)));
    assert_eq!(
        e.to_string(),
        "v.toml:2:3: key `memory.latency`: must be >= 1 cycle"
    );
    let e =
        SystemConfig::from_toml_str("[memory]\nchannel_cycles = 100001\n", "v.toml").unwrap_err();
    assert_eq!(e.key_path, "memory.channel_cycles");
    assert_eq!((e.line, e.col), (Some(2), Some(1)));
}

#[test]
fn set_overrides() {
    let mut c = SystemConfig::default();
    c.set("l2.latency", "12").unwrap();
    assert_eq!(c.l2.latency, 12);
    assert_eq!(c.l2.assoc, 8);
    c.set("system.core_ghz", "2").unwrap();
    assert_eq!(c.system.core_ghz, 2.0);
    c.set("network.topology", "hierarchical_switch").unwrap();
    c.set("network.topology", "\"hierarchical_switch\"")
        .unwrap();
    c.set("l1", "{ latency = 3 }").unwrap();
    assert_eq!(c.l1.latency, 3);
    assert_eq!(c.l1.size_bytes, 32 * 1024);
    let e = c.set("l2.asoc", "4").unwrap_err();
    assert_eq!(e.key_path, "l2.asoc");
    assert!(e.msg.contains("unknown field `asoc`"), "{e}");
    let e = c.set("nosuch.key", "4").unwrap_err();
    assert_eq!(e.key_path, "nosuch");
    let e = c.set("l2.assoc", "\"x\"").unwrap_err();
    assert_eq!(e.key_path, "l2.assoc");
    assert!(e.msg.contains("expected an integer from 0 to"), "{e}");
    let e = c.set("l2.assoc.deeper", "1").unwrap_err();
    assert_eq!(e.key_path, "l2.assoc.deeper");
    assert!(c.set("l2", "4").is_err());
    assert!(c.set("", "4").is_err());
    assert!(c.set("l2..assoc", "4").is_err());
    // Failed overrides leave the config unchanged.
    assert_eq!(c.l2.assoc, 8);
    c.set("l2.assoc", "3").unwrap();
    assert!(c.validate().is_err());
}

/// Issue 24: `--set memory.latency=18446744073709551615` said `invalid type: string`.
#[test]
fn set_names_the_range_of_an_integer_too_large_for_toml() {
    let mut c = SystemConfig::default();
    let e = c.set("memory.latency", "18446744073709551615").unwrap_err();
    assert_eq!(
        e.to_string(),
        "key `memory.latency`: 18446744073709551615 is out of range, expected an integer \
         from 0 to 9223372036854775807"
    );
    let e = c.set("network.hop_latency", "5000000000").unwrap_err();
    assert_eq!(
        e.to_string(),
        "key `network.hop_latency`: 5000000000 is out of range, expected an integer from 0 \
         to 4294967295"
    );
    let e = c.set("moped.ops_per_cycle", "-1").unwrap_err();
    assert_eq!(
        e.to_string(),
        "key `moped.ops_per_cycle`: -1 is out of range, expected an integer from 0 to \
         4294967295"
    );
    // Not integers: still taken as strings, so the type error names what was given.
    let e = c.set("memory.latency", "12abc").unwrap_err();
    assert!(e.msg.contains("invalid type: string \"12abc\""), "{e}");
    assert_eq!(c, SystemConfig::default());
}

/// Issue 24: `l2 = [1024, 2, 99]` was read field by field.
#[test]
fn a_section_written_as_an_array_is_refused() {
    let e = SystemConfig::from_toml_str("# t\nl2 = [1024, 2, 99]\n", "a.toml").unwrap_err();
    assert_eq!(
        e.to_string(),
        "a.toml:2:1: key `l2`: expected a table (`[l2]` with one `name = value` a line, or \
         `l2 = { name = value, ... }`), found an array"
    );
    for text in ["system = [16]\n", "watchdog = 5\n", "network = \"x\"\n"] {
        let e = SystemConfig::from_toml_str(text, "a.toml").unwrap_err();
        assert!(e.msg.starts_with("expected a table"), "{text}: {e}");
    }
}

#[test]
fn engines_scheme_and_step_costs_are_checked_at_their_keys() {
    let mut c = SystemConfig::default();
    c.set("moped.scheme", "RO").unwrap();
    c.set("moped.steps.match", "550").unwrap();
    c.set("moped.engines", "2").unwrap();
    c.validate().unwrap();
    assert_eq!(c.moped.engine_params().costs.match_, 550);
    assert_eq!(c.moped.scheme, crate::moped::engines::Scheme::Ro);
    let e = c.set("moped.scheme", "XO").unwrap_err();
    assert!(
        e.to_string()
            .starts_with("key `moped.scheme`: unknown variant `XO`"),
        "{e}"
    );
    let e = c.set("moped.steps.mach", "1").unwrap_err();
    assert!(e.to_string().contains("expected one of"), "{e}");
    for n in [0, MAX_ENGINES + 1] {
        c.moped.engines = n;
        let e = c.validate().unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("key `moped.engines`: must be from 1 to {MAX_ENGINES}, got {n}")
        );
    }
}

/// Issue 24: one core limit, at its key, with one message for too few and too many.
#[test]
fn one_core_limit_at_system_cores() {
    for n in [0, MAX_CORES + 1] {
        let e = check_cores(n).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("key `system.cores`: must be between 1 and 1024, got {n}")
        );
        let mut c = SystemConfig::default();
        c.system.cores = n;
        assert_eq!(c.validate().unwrap_err(), e);
    }
    check_cores(MAX_CORES).unwrap();
    let table1 = include_str!("../../configs/table1.toml");
    assert!(
        table1.contains(&format!("(1 to {MAX_CORES})")),
        "table1.toml"
    );
}

/// configs/table1.toml says it lists every field with its default: it does, and it is
/// the default configuration.
#[test]
fn table1_lists_every_field_with_its_default() {
    let text = include_str!("../../configs/table1.toml");
    let file: toml::Table = toml::from_str(text).unwrap();
    let default: toml::Table = toml::from_str(&SystemConfig::default().to_toml_string()).unwrap();
    for (section, fields) in &default {
        let listed = file.get(section).and_then(|v| v.as_table());
        let listed = listed.unwrap_or_else(|| panic!("table1.toml lacks [{section}]"));
        for key in fields.as_table().unwrap().keys() {
            assert!(
                listed.contains_key(key),
                "table1.toml lacks {section}.{key}"
            );
        }
    }
    assert_eq!(
        SystemConfig::from_toml_str(text, "table1.toml").unwrap(),
        SystemConfig::default()
    );
}

/// Issue 24: `--set l2.size_bytes=1099511627776` aborted on allocation.
#[test]
fn caches_the_host_cannot_hold_are_refused_before_allocating() {
    let mut c = SystemConfig::default();
    c.set("l2.size_bytes", "1099511627776").unwrap();
    c.validate().unwrap();
    let e = c.check_host_memory(64 << 30).unwrap_err();
    assert_eq!(
        e.to_string(),
        "key `l2.size_bytes`: the caches of 16 cores need about 20971520 MiB of host memory, \
         more than the 65536 MiB this host has"
    );
    SystemConfig::default().check_host_memory(1 << 30).unwrap();
}

#[test]
fn net_config_matches() {
    let n = SystemConfig::default().net_config();
    assert_eq!(n.n_cores, 16);
    assert_eq!(n.n_dirs, 4);
    assert_eq!(n.cores_per_leaf, 4);
    assert_eq!(n.link_bytes_per_cycle, 16);
}

#[test]
fn display_omits_unknown_parts() {
    let e = ConfigError::key("", "boom");
    assert_eq!(e.to_string(), "boom");
    let e = ConfigError {
        file: "f.toml".into(),
        line: Some(3),
        col: None,
        key_path: "a.b".into(),
        msg: "bad".into(),
    };
    assert_eq!(e.to_string(), "f.toml:3: key `a.b`: bad");
}
