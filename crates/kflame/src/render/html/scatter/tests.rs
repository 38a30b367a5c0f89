use std::io::Read;

use super::*;

/// Standard base64 decoding (the page's columns).
fn unbase64(s: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        _ => 63,
    };
    let bytes: Vec<u8> = s.bytes().filter(|&c| c != b'=').collect();
    let mut out = Vec::new();
    for chunk in bytes.chunks(4) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, &c)| n | (val(c) as u32) << (18 - 6 * i));
        out.extend_from_slice(&n.to_be_bytes()[1..chunk.len()]);
    }
    out
}

/// Column `name` of `data` as u64 values (f64 columns as their exact integer values).
fn column(data: &ScatterData, meta: &serde_json::Value, name: &str) -> Vec<i64> {
    let b = unbase64(&data.columns.iter().find(|(n, _)| *n == name).unwrap().1);
    match meta["types"][name].as_str().unwrap() {
        "f64" => b.chunks(8).map(|c| f64::from_le_bytes(c.try_into().unwrap()) as i64).collect(),
        "i32" => b.chunks(4).map(|c| i32::from_le_bytes(c.try_into().unwrap()) as i64).collect(),
        "u32" => b.chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap()) as i64).collect(),
        "u16" => b.chunks(2).map(|c| u16::from_le_bytes(c.try_into().unwrap()) as i64).collect(),
        "u8" => b.iter().map(|&c| c as i64).collect(),
        t => panic!("type {t}"),
    }
}

fn build(text: &str) -> (ScatterBuilder, Diagnostics) {
    let mut b = ScatterBuilder::new();
    let mut diag = Diagnostics::new();
    b.read_json_lines(text.as_bytes(), &mut diag).unwrap();
    (b, diag)
}

fn fixture() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/scatter/syscalls-mixed.json.gz");
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap()).read_to_string(&mut text).unwrap();
    text
}

/// Every column of the recorded fixture, decoded, equals the event lines read with a
/// general JSON parser.
#[test]
fn fixture_columns_are_the_events() {
    let text = fixture();
    let (b, diag) = build(&text);
    assert!(diag.is_empty(), "{}", diag.report("fixture"));
    let data = b.encode(&ScatterOptions::default());
    let meta: serde_json::Value = serde_json::from_str(data.meta.get()).unwrap();
    let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(meta["count"].as_u64().unwrap() as usize, lines.len());
    assert!(meta["types"].get("tid").is_none(), "record writes no tid");
    let ns = |v: &serde_json::Value| {
        let s = v.to_string();
        let (a, b) = s.split_once('.').unwrap();
        a.parse::<i64>().unwrap() * 1_000_000_000 + format!("{b:0<9}").parse::<i64>().unwrap()
    };
    let t0 = lines.iter().map(|l| ns(&l["ts"])).min().unwrap();
    assert_eq!(meta["t0"].as_str().unwrap(), format_seconds(t0));
    let (t, d, pid, cpu) = (
        column(&data, &meta, "t"),
        column(&data, &meta, "d"),
        column(&data, &meta, "pid"),
        column(&data, &meta, "cpu"),
    );
    let (comm, event, stack, func) = (
        column(&data, &meta, "comm"),
        column(&data, &meta, "event"),
        column(&data, &meta, "stack"),
        column(&data, &meta, "func"),
    );
    let stacks = column(&data, &meta, "stacks");
    let mut offsets = Vec::new();
    let mut at = 0;
    while at < stacks.len() {
        offsets.push(at);
        at += 1 + stacks[at] as usize;
    }
    let name = |i: i64| meta["names"][i as usize].as_str().unwrap().to_string();
    for (i, l) in lines.iter().enumerate() {
        assert_eq!(t[i], ns(&l["ts"]) - t0, "line {}", i + 1);
        assert_eq!(d[i], l["duration_ns"].as_i64().unwrap());
        assert_eq!(pid[i], l["pid"].as_i64().unwrap());
        assert_eq!(cpu[i], l["cpu"].as_i64().unwrap());
        assert_eq!(meta["comms"][comm[i] as usize], l["comm"]);
        assert_eq!(meta["events"][event[i] as usize], l["event"]);
        let at = offsets[stack[i] as usize];
        let frames: Vec<String> =
            stacks[at + 1..=at + stacks[at] as usize].iter().map(|&f| name(f)).collect();
        let want: Vec<String> =
            l["stack"].as_array().unwrap().iter().map(|f| f.as_str().unwrap().into()).collect();
        assert_eq!(frames, want, "line {}", i + 1);
        // record names a system call by its stack's root frame.
        assert_eq!(name(func[i]), want[0]);
    }
}

#[test]
fn bad_lines_are_counted_with_their_numbers_and_the_rest_kept() {
    let text = "{\"ts\":1.5,\"cpu\":0,\"pid\":1,\"comm\":\"a\",\"duration_ns\":10,\"stack\":[\"m\",\"f\"],\"event\":\"syscall:read\"}\n\
                not json\n\
                \n\
                {\"ts\":2.0,\"cpu\":0,\"duration_ns\":null,\"stack\":[],\"event\":\"kmem:kmalloc\"}\n\
                {\"ts\":2.5,\"cpu\":1,\"pid\":2,\"comm\":\"b\",\"duration_ns\":30,\"stack\":[\"m\"],\"event\":\"syscall:write\"\n\
                {\"ts\":3.0,\"cpu\":1,\"pid\":2,\"comm\":\"b\",\"duration_ns\":20,\"stack\":[\"m\",\"g\"],\"event\":\"syscall:write\"}\n";
    let (b, diag) = build(text);
    assert_eq!(b.len(), 2);
    let bad = diag.get(MALFORMED).unwrap();
    assert_eq!((bad.count, bad.first_line), (2, 2));
    assert!(bad.message.contains("expected one JSON event object"), "{}", bad.message);
    let nod = diag.get(NO_DURATION).unwrap();
    assert_eq!((nod.count, nod.first_line), (1, 4));
    let data = b.encode(&ScatterOptions::default());
    let meta: serde_json::Value = serde_json::from_str(data.meta.get()).unwrap();
    assert_eq!(column(&data, &meta, "t"), [0, 1_500_000_000]);
    assert_eq!(column(&data, &meta, "d"), [10, 20]);
    // syscall:NAME names the function.
    let func: Vec<&str> =
        column(&data, &meta, "func").iter().map(|&f| meta["names"][f as usize].as_str().unwrap()).collect();
    assert_eq!(func, ["read", "write"]);
}

#[test]
fn events_without_a_stack_are_kept_under_the_placeholder() {
    let text = "{\"ts\":1,\"cpu\":0,\"duration_ns\":5,\"stack\":[],\"event\":\"function_graph\"}\n\
                {\"ts\":2,\"cpu\":0,\"duration_ns\":6,\"event\":\"function_graph\"}\n\
                {\"ts\":3,\"cpu\":0,\"duration_ns\":7,\"stack\":null,\"event\":\"function_graph\"}\n";
    let (b, diag) = build(text);
    assert!(diag.is_empty());
    assert_eq!((b.len(), b.without_stack()), (3, 3));
    let data = b.encode(&ScatterOptions::default());
    let meta: serde_json::Value = serde_json::from_str(data.meta.get()).unwrap();
    assert_eq!(column(&data, &meta, "stack"), [0, 0, 0]);
    assert_eq!(column(&data, &meta, "stacks"), [1, 0]);
    assert_eq!(meta["names"][0], NO_STACK);
    // pid unknown: -1.
    assert_eq!(column(&data, &meta, "pid"), [-1, -1, -1]);
}

#[test]
fn empty_input_gives_an_empty_page() {
    let (b, diag) = build("");
    assert!(b.is_empty() && diag.is_empty());
    let data = b.encode(&ScatterOptions::default());
    let meta: serde_json::Value = serde_json::from_str(data.meta.get()).unwrap();
    assert_eq!(meta["count"], 0);
    let mut page = Vec::new();
    write_scatter_page(&mut page, &data, &ScatterOptions::default()).unwrap();
    let page = String::from_utf8(page).unwrap();
    // The page itself says so (tests/browser/scatter.test.mjs looks at it).
    assert!(page.contains("id=\"kflame-scatter-meta\">{\"version\":1,"));
}

#[test]
fn untrusted_text_cannot_end_the_data_or_markup() {
    let text = "{\"ts\":1,\"cpu\":0,\"pid\":1,\"comm\":\"</script><b>x\",\"duration_ns\":5,\
                \"stack\":[\"<img src=x onerror=alert(1)>\"],\"event\":\"e&\"}\n";
    let (b, _) = build(text);
    let opts = ScatterOptions { title: Some("</title><script>".into()), ..Default::default() };
    let data = b.encode(&opts);
    let mut page = Vec::new();
    write_scatter_page(&mut page, &data, &opts).unwrap();
    let page = String::from_utf8(page).unwrap();
    assert!(!page.contains("</script><b>") && !page.contains("<img") && !page.contains("</title><script>"));
    let meta: serde_json::Value = serde_json::from_str(data.meta.get()).unwrap();
    assert_eq!(meta["comms"][0], "</script><b>x");
    assert_eq!(meta["names"][0], "<img src=x onerror=alert(1)>");
}

#[test]
fn without_times_x_is_the_order_and_mixed_inputs_leave_untimed_events_out() {
    let (b, _) = build("{\"ts\":null,\"duration_ns\":5}\n{\"duration_ns\":6}\n");
    let data = b.encode(&ScatterOptions::default());
    let meta: serde_json::Value = serde_json::from_str(data.meta.get()).unwrap();
    assert_eq!((meta["timed"].as_bool(), column(&data, &meta, "t")), (Some(false), vec![0, 1]));
    let (b, _) = build("{\"ts\":null,\"duration_ns\":5}\n{\"ts\":4.25,\"duration_ns\":6}\n");
    assert_eq!(b.untimed_left_out(), 1);
    let data = b.encode(&ScatterOptions::default());
    let meta: serde_json::Value = serde_json::from_str(data.meta.get()).unwrap();
    assert_eq!((meta["count"].as_u64(), column(&data, &meta, "d")), (Some(1), vec![6]));
    assert_eq!(meta["t0"], "4.250000000");
}

#[test]
fn pushed_events_with_thread_ids_and_wide_ids() {
    let mut b = ScatterBuilder::new();
    let s = b.intern_stack(["a", "b"]);
    assert_eq!(b.stack_names(s), ["a", "b"]);
    for i in 0..300u32 {
        let comm = format!("task{i}");
        b.push(&ScatterEvent {
            ts_ns: Some(i as i64),
            duration_ns: 1,
            cpu: None,
            pid: Some(i),
            tid: Some(i + 1),
            comm: Some(&comm),
            event: "probe:x",
            stack: s,
        });
    }
    let data = b.encode(&ScatterOptions::default());
    let meta: serde_json::Value = serde_json::from_str(data.meta.get()).unwrap();
    assert_eq!(meta["types"]["comm"], "u16");
    assert_eq!(column(&data, &meta, "comm")[299], 299);
    assert_eq!(column(&data, &meta, "tid")[0], 1);
    // An unknown CPU is the type's maximum.
    assert_eq!(meta["types"]["cpu"], "u8");
    assert_eq!(column(&data, &meta, "cpu")[0], 255);
}

/// What a server sends: the page's meta object unchanged and every column, script-safe, and
/// a frame `</script>` or a line separator reads back as itself.
#[test]
fn served_json_is_the_page_data_and_script_safe() {
    let mut b = ScatterBuilder::new();
    let s = b.intern_stack(["main", "</script><script>alert(1)</script>"]);
    b.push(&ScatterEvent {
        ts_ns: Some(1_700_000_000_123_456_789),
        duration_ns: 7,
        cpu: Some(2),
        pid: Some(9),
        tid: None,
        comm: Some("a\u{2028}b&c"),
        event: "syscall:read",
        stack: s,
    });
    let data = b.encode(&ScatterOptions::default());
    let json = data.to_json();
    assert!(!json.contains(['<', '>', '&', '\u{2028}']), "{json}");
    let back: serde_json::Value = serde_json::from_str(&json).unwrap();
    let meta: serde_json::Value = serde_json::from_str(data.meta.get()).unwrap();
    assert_eq!(back["meta"], meta);
    assert_eq!(meta["names"][1], "</script><script>alert(1)</script>");
    assert_eq!(meta["comms"][0], "a\u{2028}b&c");
    assert_eq!(meta["t0"], "1700000000.123456789");
    let columns = back["columns"].as_object().unwrap();
    assert_eq!(columns.len(), data.columns.len());
    for (name, b64) in &data.columns {
        assert_eq!(columns[*name], b64.as_str(), "{name}");
    }
    // The meta text is embedded as it is, and the columns follow in their order.
    let names: Vec<&str> = data.columns.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, ["t", "d", "pid", "cpu", "comm", "event", "stack", "func", "stacks"]);
    assert!(json.starts_with(&format!("{{\"meta\":{},\"columns\":{{\"t\":\"", data.meta.get())), "{json}");
    assert!(json.ends_with(&format!("\"stacks\":\"{}\"}}}}", data.columns[8].1)), "{json}");
}
