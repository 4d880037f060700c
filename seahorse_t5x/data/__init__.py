"""Every data reader and the prepared split files.

`readers` (SEAHORSE TSVs), `articles` (GEM article sources), `prepare` (the joined split
files), `splits` (reading them back), `demo_data` (the synthetic demo dataset) and
`benchmarks` (mFACE, TRUE, METAL, local NLI releases). Plain Python: no TensorFlow, no JAX.
"""
