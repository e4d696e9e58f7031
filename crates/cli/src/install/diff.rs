//! A small unified line diff for dry runs (no dependency needed).

/// Lines of context around each change.
const CONTEXT: usize = 3;
/// Above this many line pairs the diff shows the whole old and new text
/// instead of a minimal diff (keeps the LCS table small).
const MAX_CELLS: usize = 4_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Keep(usize, usize),
    Del(usize),
    Add(usize),
}

/// A unified diff of `old` → `new` with `---`/`+++` headers naming `label`.
/// `old` is `None` for a file that does not exist yet, `new` is `None` for a
/// file that would be deleted. Empty when nothing changes.
pub fn unified(label: &str, old: Option<&str>, new: Option<&str>) -> String {
    if old == new {
        return String::new();
    }
    let a: Vec<&str> = old.map(|s| s.lines().collect()).unwrap_or_default();
    let b: Vec<&str> = new.map(|s| s.lines().collect()).unwrap_or_default();
    let ops = script(&a, &b);
    let mut out = format!(
        "--- {}\n+++ {}\n",
        if old.is_some() {
            format!("a{label}")
        } else {
            "/dev/null".into()
        },
        if new.is_some() {
            format!("b{label}")
        } else {
            "/dev/null".into()
        },
    );
    // Group ops into hunks separated by more than 2*CONTEXT unchanged lines.
    let changed: Vec<usize> = ops
        .iter()
        .enumerate()
        .filter(|(_, o)| !matches!(o, Op::Keep(..)))
        .map(|(i, _)| i)
        .collect();
    if changed.is_empty() {
        // Only the trailing newline differs.
        out.push_str("@@ trailing newline differs @@\n");
        return out;
    }
    let mut i = 0;
    while i < changed.len() {
        let start = changed[i].saturating_sub(CONTEXT);
        let mut end = changed[i];
        while i + 1 < changed.len() && changed[i + 1] <= end + 2 * CONTEXT + 1 {
            i += 1;
            end = changed[i];
        }
        let end = (end + CONTEXT + 1).min(ops.len());
        let (mut a0, mut b0) = position(&ops[..start]);
        let (mut al, mut bl) = (0, 0);
        let mut body = String::new();
        for op in &ops[start..end] {
            match *op {
                Op::Keep(x, _) => {
                    body.push_str(&format!(" {}\n", a[x]));
                    al += 1;
                    bl += 1;
                }
                Op::Del(x) => {
                    body.push_str(&format!("-{}\n", a[x]));
                    al += 1;
                }
                Op::Add(y) => {
                    body.push_str(&format!("+{}\n", b[y]));
                    bl += 1;
                }
            }
        }
        if al > 0 {
            a0 += 1;
        }
        if bl > 0 {
            b0 += 1;
        }
        out.push_str(&format!("@@ -{a0},{al} +{b0},{bl} @@\n{body}"));
        i += 1;
    }
    out
}

fn position(ops: &[Op]) -> (usize, usize) {
    ops.iter().fold((0, 0), |(a, b), op| match op {
        Op::Keep(..) => (a + 1, b + 1),
        Op::Del(_) => (a + 1, b),
        Op::Add(_) => (a, b + 1),
    })
}

/// An edit script from a longest-common-subsequence table.
fn script(a: &[&str], b: &[&str]) -> Vec<Op> {
    // Trim the common prefix and suffix first: configs change in few places.
    let pre = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let suf = a[pre..]
        .iter()
        .rev()
        .zip(b[pre..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (am, bm) = (&a[pre..a.len() - suf], &b[pre..b.len() - suf]);
    let mut ops: Vec<Op> = (0..pre).map(|i| Op::Keep(i, i)).collect();
    let (n, m) = (am.len(), bm.len());
    if n.saturating_mul(m) > MAX_CELLS {
        ops.extend((0..n).map(|i| Op::Del(pre + i)));
        ops.extend((0..m).map(|j| Op::Add(pre + j)));
    } else {
        let mut t = vec![0u32; (n + 1) * (m + 1)];
        let w = m + 1;
        for i in (0..n).rev() {
            for j in (0..m).rev() {
                t[i * w + j] = if am[i] == bm[j] {
                    t[(i + 1) * w + j + 1] + 1
                } else {
                    t[(i + 1) * w + j].max(t[i * w + j + 1])
                };
            }
        }
        let (mut i, mut j) = (0, 0);
        while i < n || j < m {
            if i < n && j < m && am[i] == bm[j] {
                ops.push(Op::Keep(pre + i, pre + j));
                i += 1;
                j += 1;
            } else if i < n && (j == m || t[(i + 1) * w + j] >= t[i * w + j + 1]) {
                ops.push(Op::Del(pre + i));
                i += 1;
            } else {
                ops.push(Op::Add(pre + j));
                j += 1;
            }
        }
    }
    let (a_off, b_off) = (a.len() - suf, b.len() - suf);
    ops.extend((0..suf).map(|k| Op::Keep(a_off + k, b_off + k)));
    ops
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_change_is_empty() {
        assert_eq!(unified("/f", Some("a\n"), Some("a\n")), "");
    }

    #[test]
    fn new_file_is_all_additions() {
        let d = unified("/f", None, Some("x\ny\n"));
        assert_eq!(d, "--- /dev/null\n+++ b/f\n@@ -0,0 +1,2 @@\n+x\n+y\n");
    }

    #[test]
    fn middle_change_has_context() {
        let old = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
        let new = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n";
        let d = unified("/f", Some(old), Some(new));
        assert_eq!(
            d,
            "--- a/f\n+++ b/f\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"
        );
    }

    #[test]
    fn applying_the_diff_reconstructs_new() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\n";
        let new = "a\nB\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\n";
        let d = unified("/f", Some(old), Some(new));
        // Every '+' line is in new, every '-' line in old.
        for l in d.lines().skip(2).filter(|l| !l.starts_with("@@")) {
            let (tag, text) = l.split_at(1);
            match tag {
                "+" => assert!(new.lines().any(|x| x == text)),
                "-" => assert!(old.lines().any(|x| x == text)),
                " " => assert!(old.lines().any(|x| x == text)),
                _ => panic!("{l}"),
            }
        }
        assert!(d.contains("-b\n+B\n"));
        assert!(d.contains("+l\n"));
    }
}
