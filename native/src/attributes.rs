//! Attribute names as the digest treats them (docs/design/digest-engines.md, "Numbers"): which are
//! not workload measures, which are counted by value although numbers, and a cache that
//! decides each name once (logs repeat the same header lines in the same order).

/// Not workload measures (pt's --ignore-attributes and a few more, as the Python
/// engine's `IGNORED`), plus what is read separately (`db`, `user`, `host`, `ts`,
/// `bytes`) and parser bookkeeping.
const IGNORED: &[&[u8]] = &[
    b"arg",
    b"cmd",
    b"insert_id",
    b"last_insert_id",
    b"ip",
    b"port",
    b"Thread_id",
    b"Id",
    b"timestamp",
    b"exptime",
    b"flags",
    b"key_print",
    b"res",
    b"val",
    b"server_id",
    b"offset",
    b"end_log_pos",
    b"Xid",
    b"Schema",
    b"Start",
    b"End",
    b"Time",
    b"InnoDB_trx_id",
    b"pos_in_log",
    b"db",
    b"user",
    b"host",
    b"ts",
    b"bytes",
];

/// Counted by value even when their values are numbers.
const CATEGORICAL: &[&[u8]] =
    &[b"Errno", b"Last_errno", b"Error_no", b"Killed", b"Log_slow_rate_limit", b"Log_slow_rate_type"];

/// What the digest does with one attribute name, decided once per name.
pub(crate) struct KeyInfo {
    pub(crate) name: Box<[u8]>,
    pub(crate) ignored: bool,
    pub(crate) categorical: bool,
    pub(crate) num_id: Option<u16>,
    pub(crate) flag_id: Option<u16>,
    pub(crate) text_id: Option<u16>,
}

/// Attribute names of recent events: logs repeat the same header lines in the same
/// order, so the info for the k-th property is usually the previous event's k-th.
#[derive(Default)]
pub(crate) struct KeyCache {
    pub(crate) infos: Vec<KeyInfo>,
    by_name: hashbrown::HashMap<Box<[u8]>, usize, foldhash::fast::FixedState>,
    by_position: Vec<usize>,
}

impl KeyCache {
    #[inline]
    pub(crate) fn lookup(&mut self, position: usize, key: &[u8]) -> usize {
        // A position never filled holds `usize::MAX`, which `get` turns down.
        if let Some(&i) = self.by_position.get(position) {
            if self.infos.get(i).is_some_and(|info| &info.name[..] == key) {
                return i;
            }
        }
        let i = match self.by_name.get(key) {
            Some(&i) => i,
            None => {
                self.infos.push(KeyInfo {
                    name: key.into(),
                    ignored: IGNORED.contains(&key),
                    categorical: CATEGORICAL.contains(&key),
                    num_id: None,
                    flag_id: None,
                    text_id: None,
                });
                self.by_name.insert(key.into(), self.infos.len() - 1);
                self.infos.len() - 1
            }
        };
        if self.by_position.len() <= position {
            self.by_position.resize(position + 1, usize::MAX);
        }
        self.by_position[position] = i;
        i
    }
}
