//! A class's figures as Python reads them: named fields, typed in govern/_native.pyi.
//!
//! Each class here has exactly the fields of its twin in govern/digest/aggregate.py
//! (`ClassFigures`: `ClassAgg`, `MetricFigures`: `Metric`, `SampleFigures`: `Sample`,
//! `RunsFigures`: `Runs`, `FitFigures`: `Fit`), with names resolved, texts decoded and
//! capped values folded as the Python engine keeps them, so govern/digest/native_total.py
//! builds the dataclasses by field name and a new figure needs nothing there
//! (docs/design/digest-engines.md, "The boundary"). tests/digest/test_native.py checks
//! that the field names agree.

use std::collections::HashMap;

use pyo3::prelude::*;
use pyo3::types::{IntoPyDict, PyBytes, PyDict, PyList, PySet, PyString};

use crate::class::{Class, Runs, Sample};
use crate::time::Ts;
use crate::total::Total;

/// Where values past a cap are counted (aggregate.py `OTHER_VALUE`).
const OTHER_VALUE: &str = "(other)";

/// aggregate.py `ClassAgg`.
#[pyclass(module = "govern._native", frozen, get_all)]
pub struct ClassFigures {
    fingerprint: Py<PyBytes>,
    count: u64,
    ts_min: Option<String>,
    ts_max: Option<String>,
    metrics: Py<PyDict>,
    booleans: Py<PyDict>,
    strings: Py<PyDict>,
    servers: Py<PyDict>,
    histogram: Py<PyList>,
    sample: Option<Py<SampleFigures>>,
    runs: Py<RunsFigures>,
    single_runs: Py<RunsFigures>,
    connections: Py<PySet>,
    texts: Py<PySet>,
    fit: Py<FitFigures>,
    unknown_db: u64,
    unknown_ts: bool,
}

/// aggregate.py `Metric`: micro-units, the sketch's buckets by key.
#[pyclass(module = "govern._native", frozen, get_all)]
pub struct MetricFigures {
    count: u64,
    total: i128,
    low: i128,
    high: i128,
    buckets: Py<PyDict>,
    decimal: bool,
}

/// aggregate.py `Sample`.
#[pyclass(module = "govern._native", frozen, get_all)]
pub struct SampleFigures {
    query_time: i128,
    query: Py<PyBytes>,
    ts: Option<String>,
    db: Option<Py<PyString>>,
    user: Option<Py<PyString>>,
    host: Option<Py<PyString>>,
    file: u32,
    line: u64,
    truncated: bool,
    unknown_ts: bool,
    unknown_db: bool,
}

/// aggregate.py `Runs`: leads by query ID.
#[pyclass(module = "govern._native", frozen, get_all)]
pub struct RunsFigures {
    runs: u64,
    calls: u64,
    repeated_calls: u64,
    longest: u64,
    lengths: Py<PyDict>,
    leads: Py<PyDict>,
}

/// aggregate.py `Fit`.
#[pyclass(module = "govern._native", frozen, get_all)]
pub struct FitFigures {
    n: i128,
    sx: i128,
    sy: i128,
    sxx: i128,
    sxy: i128,
}

/// decode.py `text`: log bytes as text, bytes that are not UTF-8 as `\xNN` escapes.
fn text<'py>(py: Python<'py>, raw: &[u8]) -> PyResult<Bound<'py, PyString>> {
    match std::str::from_utf8(raw) {
        Ok(s) => Ok(PyString::new(py, s)),
        Err(_) => Ok(PyBytes::new(py, raw).call_method1("decode", ("utf-8", "backslashreplace"))?.cast_into()?),
    }
}

/// decode.py `label`: an attribute name as text.
fn label<'py>(py: Python<'py>, raw: &[u8]) -> PyResult<Bound<'py, PyString>> {
    match std::str::from_utf8(raw) {
        Ok(s) if s.is_ascii() => Ok(PyString::new(py, s)),
        _ => Ok(PyBytes::new(py, raw).call_method1("decode", ("ascii", "replace"))?.cast_into()?),
    }
}

fn opt_text<'py>(py: Python<'py>, total: &Total, id: Option<u32>) -> PyResult<Option<Py<PyString>>> {
    id.map(|v| text(py, total.texts.get(v)).map(Bound::unbind)).transpose()
}

fn ts(t: Option<Ts>) -> Option<String> {
    t.map(|t| String::from_utf8_lossy(t.as_bytes()).into_owned())
}

/// `dict[key] = dict.get(key, 0) + n`.
fn add_count(dict: &Bound<'_, PyDict>, key: &Bound<'_, PyAny>, n: u64) -> PyResult<()> {
    let held: u64 = match dict.get_item(key)? {
        Some(v) => v.extract()?,
        None => 0,
    };
    dict.set_item(key, held + n)
}

impl ClassFigures {
    /// Class `c` of `total` (`fp`: its fingerprint id; none for `other` and totals).
    /// `ids` caches query IDs of leads across calls.
    pub fn new(
        py: Python<'_>,
        total: &Total,
        fp: Option<u32>,
        c: &Class,
        ids: &mut HashMap<u32, String>,
    ) -> PyResult<ClassFigures> {
        let metrics = PyDict::new(py);
        for (i, s) in c.nums.iter().enumerate().filter(|(_, s)| s.count() > 0) {
            let figures = MetricFigures {
                count: s.count(),
                total: s.sum(),
                low: s.min(),
                high: s.max(),
                buckets: s.buckets().into_py_dict(py)?.unbind(),
                decimal: c.decimal.get(i),
            };
            metrics.set_item(label(py, total.num_names.get(i as u32))?, figures)?;
        }
        let booleans = PyDict::new(py);
        for (i, &(yes, n)) in c.flags.iter().enumerate().filter(|(_, f)| f.1 > 0) {
            booleans.set_item(label(py, total.flag_names.get(i as u32))?, PyList::new(py, [yes, n])?)?;
        }
        let strings = PyDict::new(py);
        for (i, values) in c.strings.iter().enumerate().filter(|(_, v)| !v.list.is_empty() || v.other > 0) {
            let held = PyDict::new(py);
            for &(v, n) in &values.list {
                add_count(&held, text(py, total.texts.get(v))?.as_any(), n)?;
            }
            if values.other > 0 {
                add_count(&held, PyString::new(py, OTHER_VALUE).as_any(), values.other)?;
            }
            strings.set_item(label(py, total.text_names.get(i as u32))?, held)?;
        }
        let servers = PyDict::new(py);
        for &(s, n) in c.servers.as_deref().map_or(&[][..], |s| &s[..]) {
            servers.set_item(String::from_utf8_lossy(total.servers.get(s)), n)?;
        }
        let sample = c.sample.as_deref().map(|s| SampleFigures::new(py, total, s)).transpose()?;
        let fit = c.fit.as_deref().copied().unwrap_or_default();
        Ok(ClassFigures {
            fingerprint: PyBytes::new(py, fp.map_or(&b""[..], |f| total.fingerprints.get(f))).unbind(),
            count: c.count,
            ts_min: ts(c.ts_min),
            ts_max: ts(c.ts_max),
            metrics: metrics.unbind(),
            booleans: booleans.unbind(),
            strings: strings.unbind(),
            servers: servers.unbind(),
            histogram: PyList::new(py, c.histogram)?.unbind(),
            sample: sample.map(|s| Py::new(py, s)).transpose()?,
            runs: Py::new(py, RunsFigures::new(py, total, &c.runs, ids)?)?,
            single_runs: Py::new(
                py,
                RunsFigures::new(py, total, c.single_runs.as_deref().unwrap_or(&Runs::default()), ids)?,
            )?,
            connections: PySet::new(py, c.connections.0.iter())?.unbind(),
            texts: PySet::new(py, c.texts.0.iter())?.unbind(),
            fit: Py::new(py, FitFigures { n: fit[0], sx: fit[1], sy: fit[2], sxx: fit[3], sxy: fit[4] })?,
            unknown_db: c.unknown_db,
            unknown_ts: c.unknown_ts,
        })
    }
}

impl SampleFigures {
    fn new(py: Python<'_>, total: &Total, s: &Sample) -> PyResult<SampleFigures> {
        Ok(SampleFigures {
            query_time: s.query_time,
            query: PyBytes::new(py, &s.query).unbind(),
            ts: ts(s.ts),
            db: opt_text(py, total, s.db)?,
            user: opt_text(py, total, s.user)?,
            host: opt_text(py, total, s.host)?,
            file: s.file,
            line: s.line,
            truncated: s.truncated,
            unknown_ts: s.unknown_ts,
            unknown_db: s.unknown_db,
        })
    }
}

impl RunsFigures {
    fn new(py: Python<'_>, total: &Total, runs: &Runs, ids: &mut HashMap<u32, String>) -> PyResult<RunsFigures> {
        let leads = PyDict::new(py);
        for &(lead, n, calls) in &runs.leads {
            // The total's query IDs: each MD5 computed once (`Total::query_ids`).
            let id = ids.entry(lead).or_insert_with(|| format!("{:032X}", total.query_ids()[lead as usize]));
            leads.set_item(id.as_str(), PyList::new(py, [n, calls])?)?;
        }
        if let Some((n, calls)) = runs.leads_other {
            leads.set_item(OTHER_VALUE, PyList::new(py, [n, calls])?)?;
        }
        Ok(RunsFigures {
            runs: runs.runs,
            calls: runs.calls,
            repeated_calls: runs.repeated_calls,
            longest: runs.longest,
            lengths: runs.lengths.iter().copied().into_py_dict(py)?.unbind(),
            leads: leads.unbind(),
        })
    }
}
