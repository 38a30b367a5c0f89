//! `/proc/loadavg`: `0.52 0.58 0.59 2/345 12345`.

use std::path::Path;

use super::{Problem, Value, bad};

pub(super) fn parse(text: &str, file: &Path, problems: &mut Vec<Problem>) -> Option<Vec<Value>> {
    let f: Vec<f64> = text.split_whitespace().take(3).map_while(|x| x.parse().ok()).collect();
    if f.len() < 3 {
        problems.push(bad(file, 1, "expected three load averages (`0.52 0.58 0.59 ...`)"));
        return None;
    }
    let v = |name: &'static str, value: f64| Value { name, label: String::new(), value };
    Some(vec![v("load1", f[0]), v("load5", f[1]), v("load15", f[2])])
}
