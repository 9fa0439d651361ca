//! The Python extension `govern._native` (built with the `python` feature).
//!
//! Python gets finished aggregates as plain dicts, lists, bytes and numbers: no object
//! per event crosses the boundary, and the GIL is released while a log is digested.

use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use crate::aggregate::{ClassStats, Distribution, Kind};
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
fn digest_file<'py>(
    py: Python<'py>,
    path: std::path::PathBuf,
    threads: usize,
    max_classes: Option<usize>,
) -> PyResult<Bound<'py, PyDict>> {
    let max = max_classes.unwrap_or(usize::MAX);
    let part = py
        .detach(|| crate::file::digest_file(&path, threads, max))
        .map_err(|e| PyOSError::new_err(format!("{}: {e}", path.display())))?;
    part_to_dict(py, &part)
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
        let s =
            self.inner.as_mut().ok_or_else(|| pyo3::exceptions::PyValueError::new_err("stream already finished"))?;
        py.detach(|| s.feed(data));
        Ok(())
    }

    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.inner.take().ok_or_else(|| pyo3::exceptions::PyValueError::new_err("stream already finished"))?;
        let part = py.detach(|| s.finish());
        part_to_dict(py, &part)
    }
}

fn distribution<'py>(py: Python<'py>, d: &Distribution) -> PyResult<Bound<'py, PyList>> {
    PyList::new(py, d.sorted().into_iter().map(|(v, n)| (PyBytes::new(py, v), n)))
}

fn class_to_dict<'py>(py: Python<'py>, st: &ClassStats, names: &[(Box<[u8]>, Kind)]) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("count", st.count)?;
    let nums = PyDict::new(py);
    for (i, s) in st.nums.iter().enumerate().filter(|(_, s)| s.count > 0) {
        let n = PyDict::new(py);
        n.set_item("count", s.count)?;
        n.set_item("sum", s.sum())?;
        n.set_item("min", s.min)?;
        n.set_item("max", s.max)?;
        let (zeros, buckets) = s.sketch.parts();
        n.set_item("sketch_zeros", zeros)?;
        n.set_item("sketch", PyList::new(py, buckets.iter().copied())?)?;
        nums.set_item(PyBytes::new(py, &names[i].0), n)?;
    }
    d.set_item("numbers", nums)?;
    let bools = PyDict::new(py);
    for (i, &(yes, n)) in st.bools.iter().enumerate().filter(|(_, b)| b.1 > 0) {
        bools.set_item(PyBytes::new(py, &names[i].0), (yes, n))?;
    }
    d.set_item("booleans", bools)?;
    d.set_item("db", distribution(py, &st.db)?)?;
    d.set_item("user", distribution(py, &st.user)?)?;
    d.set_item("host", distribution(py, &st.host)?)?;
    d.set_item("no_db", st.db_unknown)?;
    d.set_item("first_seen", st.first_seen)?;
    d.set_item("last_seen", st.last_seen)?;
    d.set_item("no_time", st.time_unknown)?;
    if let Some(s) = &st.sample {
        let sample = PyDict::new(py);
        sample.set_item("query", PyBytes::new(py, &s.query))?;
        sample.set_item("query_time", s.query_time)?;
        sample.set_item("ts", s.ts)?;
        sample.set_item("db", s.db.as_deref().map(|b| PyBytes::new(py, b)))?;
        sample.set_item("pos_in_log", s.pos_in_log)?;
        d.set_item("sample", sample)?;
    }
    Ok(d)
}

fn part_to_dict<'py>(py: Python<'py>, part: &Part) -> PyResult<Bound<'py, PyDict>> {
    let names = part.attrs.names();
    let d = PyDict::new(py);
    d.set_item("events", part.events)?;
    d.set_item("no_query", part.no_query)?;
    d.set_item("bad_values", part.bad_values)?;
    d.set_item("first_bad_value", part.first_bad_value)?;
    let classes = PyList::empty(py);
    for (fp, st) in part.classes.fingerprints.iter().zip(&part.classes.stats) {
        let c = class_to_dict(py, st, names)?;
        c.set_item("fingerprint", PyBytes::new(py, fp))?;
        classes.append(c)?;
    }
    d.set_item("classes", classes)?;
    d.set_item("other", class_to_dict(py, &part.classes.other, names)?)?;
    Ok(d)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(fingerprint, m)?)?;
    m.add_function(wrap_pyfunction!(py_query_id, m)?)?;
    m.add_function(wrap_pyfunction!(digest_file, m)?)?;
    m.add_class::<Stream>()?;
    m.add("SKETCH_ALPHA", crate::sketch::ALPHA)?;
    Ok(())
}
