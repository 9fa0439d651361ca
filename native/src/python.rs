//! The Python extension `govern._native` (built with the `python` feature).
//!
//! Python gets a finished digest that stays in Rust and hands out plain dicts, lists,
//! bytes and integers on request: no object per event crosses the boundary, and the GIL
//! is released while a log is digested.

use pyo3::exceptions::{PyIndexError, PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use crate::aggregate::{ClassStats, Kind};
use crate::digest::Part;
use crate::fingerprint::{query_id, Fingerprinter};

/// pt's fingerprint of one statement (bytes in, bytes out).
#[pyfunction]
fn fingerprint<'py>(py: Python<'py>, query: &[u8]) -> Bound<'py, PyBytes> {
    PyBytes::new(py, Fingerprinter::new().fingerprint(query))
}

/// pt's query ID of a fingerprint: 32 uppercase hex digits of its MD5.
#[pyfunction(name = "query_id")]
fn py_query_id(fingerprint: &[u8]) -> String {
    query_id(fingerprint)
}

/// Digest one uncompressed log file on `threads` threads (0: every core).
#[pyfunction]
#[pyo3(signature = (path, threads=0, max_classes=None))]
fn digest_file(
    py: Python<'_>,
    path: std::path::PathBuf,
    threads: usize,
    max_classes: Option<usize>,
) -> PyResult<Digest> {
    let max = max_classes.unwrap_or(usize::MAX);
    let part = py
        .detach(|| crate::file::digest_file(&path, threads, max))
        .map_err(|e| PyOSError::new_err(format!("{}: {e}", path.display())))?;
    Ok(Digest { part })
}

/// A log fed in pieces (stdin, decompressed files); `finish()` returns the digest.
#[pyclass(module = "govern._native")]
struct Stream {
    inner: Option<crate::stream::Stream>,
}

#[pymethods]
impl Stream {
    #[new]
    #[pyo3(signature = (max_classes=None))]
    fn new(max_classes: Option<usize>) -> Self {
        Stream { inner: Some(crate::stream::Stream::new(max_classes.unwrap_or(usize::MAX), 32 << 20)) }
    }

    fn feed(&mut self, py: Python<'_>, data: &[u8]) -> PyResult<()> {
        let s = self.inner.as_mut().ok_or_else(|| PyValueError::new_err("stream already finished"))?;
        py.detach(|| s.feed(data));
        Ok(())
    }

    fn finish(&mut self, py: Python<'_>) -> PyResult<Digest> {
        let s = self.inner.take().ok_or_else(|| PyValueError::new_err("stream already finished"))?;
        Ok(Digest { part: py.detach(|| s.finish()) })
    }
}

/// A finished digest, kept in Rust: Python builds objects only for what it asks for
/// (a summary of every class, or one class in full), so 200,000 classes cost Rust's
/// compact memory, not Python dicts.
#[pyclass(module = "govern._native", frozen)]
struct Digest {
    part: Part,
}

#[pymethods]
impl Digest {
    /// Events aggregated.
    #[getter]
    fn events(&self) -> u64 {
        self.part.events
    }

    /// Events without a statement (pt skips them).
    #[getter]
    fn no_query(&self) -> u64 {
        self.part.no_query
    }

    /// Events whose Query_time is not a number (not aggregated), and the byte offset of
    /// the first one.
    #[getter]
    fn malformed(&self) -> (u64, Option<u64>) {
        (self.part.malformed, self.part.first_malformed)
    }

    fn __len__(&self) -> usize {
        self.part.classes.len()
    }

    /// (fingerprint, count, Query_time sum in micro-units or None) per class, in order
    /// of first appearance.
    fn summary<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let qt = self.part.attrs.names(Kind::Num).iter().position(|n| *n == b"Query_time");
        let rows = self.part.classes.fingerprints.iter().zip(&self.part.classes.stats).map(|(fp, st)| {
            let sum = qt.and_then(|i| st.nums.get(i)).filter(|s| s.count() > 0).map(|s| s.sum());
            (PyBytes::new(py, fp), st.count, sum)
        });
        PyList::new(py, rows)
    }

    /// Class `i` in full (see govern/native.py for the layout).
    fn class_at<'py>(&self, py: Python<'py>, i: usize) -> PyResult<Bound<'py, PyDict>> {
        let st = self.part.classes.stats.get(i).ok_or_else(|| PyIndexError::new_err(i))?;
        let d = class_to_dict(py, &self.part, st)?;
        d.set_item("fingerprint", PyBytes::new(py, &self.part.classes.fingerprints[i]))?;
        Ok(d)
    }

    /// The events above the class cap, in the same layout (no fingerprint).
    fn other<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        class_to_dict(py, &self.part, &self.part.classes.other)
    }
}

fn class_to_dict<'py>(py: Python<'py>, part: &Part, st: &ClassStats) -> PyResult<Bound<'py, PyDict>> {
    let [num_names, flag_names, text_names] = [Kind::Num, Kind::Flag, Kind::Text].map(|k| part.attrs.names(k));
    let d = PyDict::new(py);
    d.set_item("count", st.count)?;
    let nums = PyDict::new(py);
    for (i, s) in st.nums.iter().enumerate().filter(|(_, s)| s.count() > 0) {
        let n = PyDict::new(py);
        n.set_item("count", s.count())?;
        n.set_item("sum", s.sum())?;
        n.set_item("min", s.min())?;
        n.set_item("max", s.max())?;
        n.set_item("buckets", PyList::new(py, s.buckets())?)?;
        nums.set_item(PyBytes::new(py, num_names[i]), n)?;
    }
    d.set_item("metrics", nums)?;
    let flags = PyDict::new(py);
    for (i, &(yes, n)) in st.flags.iter().enumerate().filter(|(_, f)| f.1 > 0) {
        flags.set_item(PyBytes::new(py, flag_names[i]), (yes, n))?;
    }
    d.set_item("flags", flags)?;
    let values = PyDict::new(py);
    for (i, counts) in st.texts.iter().enumerate().filter(|(_, c)| !c.0.is_empty()) {
        let list = PyList::new(py, counts.0.iter().map(|&(v, n)| (PyBytes::new(py, part.texts.get(v)), n)))?;
        values.set_item(PyBytes::new(py, text_names[i]), list)?;
    }
    d.set_item("values", values)?;
    d.set_item("no_db", st.db_unknown)?;
    d.set_item("first_seen", st.first_seen)?;
    d.set_item("last_seen", st.last_seen)?;
    d.set_item("no_time", st.time_unknown)?;
    if let Some(s) = &st.sample {
        let sample = PyDict::new(py);
        sample.set_item("query", PyBytes::new(py, &s.query))?;
        sample.set_item("query_time", s.query_time)?;
        sample.set_item("ts", s.ts)?;
        sample.set_item("db", s.db.map(|v| PyBytes::new(py, part.texts.get(v))))?;
        sample.set_item("pos_in_log", s.pos_in_log)?;
        d.set_item("sample", sample)?;
    }
    Ok(d)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(fingerprint, m)?)?;
    m.add_function(wrap_pyfunction!(py_query_id, m)?)?;
    m.add_function(wrap_pyfunction!(digest_file, m)?)?;
    m.add_class::<Stream>()?;
    m.add_class::<Digest>()?;
    Ok(())
}
