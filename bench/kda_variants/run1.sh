set -u
cd "$(dirname "$0")/../.."
nvidia-smi -L; python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"
export TRITON_INTERPRET=0 PYTHONUNBUFFERED=1
t0=$(date +%s)
(python3 -m pytest -q -p no:warnings tests/python/test_kernels_kda.py > $OUT/pytest_kda.txt 2>&1; echo "rc $?" >> $OUT/pytest_kda.txt) &
(python3 -m pytest -q -p no:warnings tests/python/test_kda_families.py > $OUT/pytest_fam.txt 2>&1; echo "rc $?" >> $OUT/pytest_fam.txt) &
python3 bench/kda_variants/time_variants.py --precompile
wait
echo "tests done after $(( $(date +%s) - t0 )) s"; tail -3 $OUT/pytest_kda.txt $OUT/pytest_fam.txt
python3 bench/kda_variants/time_variants.py --run 2>&1 | tee $OUT/timing.txt
echo "total $(( $(date +%s) - t0 )) s"
