/*
 * Unit tests: the rank of a distributed job, read from each launcher's
 * environment as that launcher sets it (the variables of torchrun, Open MPI
 * 4's mpirun, MPICH's hydra and Slurm's srun), and the run id the ranks of one
 * job share and no other job has.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <sonde/job.h>

#define ENV(...) ((char *const[]){ __VA_ARGS__, NULL })

/* Open MPI 4: rank, size, local rank, job id; the ranks of one mpirun share the id. */
static void test_openmpi(void **state)
{
	struct sonde_job a, b, c;

	assert_int_equal(
		sonde_job__detect(ENV("OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=4",
				      "OMPI_COMM_WORLD_LOCAL_RANK=1",
				      "OMPI_MCA_ess_base_jobid=876609537",
				      "OMPI_MCA_orte_hnp_uri=876609536.0;tcp://192.0.2.2:33697",
				      "OMPI_MCA_orte_precondition_transports=c311d651-2cafe04f"),
				  &a),
		1);
	assert_string_equal(a.launcher, "openmpi");
	assert_string_equal(a.id, "876609537");
	assert_int_equal(a.rank, 1);
	assert_int_equal(a.size, 4);
	assert_int_equal(a.local_rank, 1);
	assert_true(a.run_id_shared);
	assert_int_equal(strlen(a.run_id), 32);
	assert_int_equal(
		sonde_job__detect(ENV("OMPI_COMM_WORLD_RANK=3", "OMPI_COMM_WORLD_SIZE=4",
				      "OMPI_COMM_WORLD_LOCAL_RANK=0",
				      "OMPI_MCA_ess_base_jobid=876609537",
				      "OMPI_MCA_orte_hnp_uri=876609536.0;tcp://192.0.2.2:33697",
				      "OMPI_MCA_orte_precondition_transports=c311d651-2cafe04f"),
				  &b),
		1);
	assert_string_equal(a.run_id, b.run_id); /* another rank, another host: one run */
	/* the same job id from another mpirun (another port, another key): another run */
	assert_int_equal(
		sonde_job__detect(ENV("OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=4",
				      "OMPI_MCA_ess_base_jobid=876609537",
				      "OMPI_MCA_orte_hnp_uri=876609536.0;tcp://192.0.2.2:40001",
				      "OMPI_MCA_orte_precondition_transports=9f00aa11-00000001"),
				  &c),
		1);
	assert_string_not_equal(a.run_id, c.run_id);
	assert_int_equal(c.local_rank, -1); /* not told */
}

/* torchrun wins over the Slurm step it runs in; its rank is the trainer's. */
static void test_torchrun_in_slurm(void **state)
{
	struct sonde_job j;

	assert_int_equal(
		sonde_job__detect(ENV("SLURM_PROCID=0", "SLURM_STEP_ID=0", "SLURM_JOB_ID=77",
				      "SLURM_NTASKS=1", "TORCHELASTIC_RUN_ID=train-1", "RANK=5",
				      "WORLD_SIZE=8", "LOCAL_RANK=1", "MASTER_ADDR=node1",
				      "MASTER_PORT=29500"),
				  &j),
		1);
	assert_string_equal(j.launcher, "torchrun");
	assert_string_equal(j.id, "train-1");
	assert_int_equal(j.rank, 5);
	assert_int_equal(j.size, 8);
	assert_int_equal(j.local_rank, 1);
}

/* srun: the step's task; its id is JOB.STEP; the node's name is the host. */
static void test_slurm(void **state)
{
	struct sonde_job a, b;

	assert_int_equal(
		sonde_job__detect(ENV("SLURM_PROCID=1", "SLURM_STEP_ID=3", "SLURM_JOB_ID=77",
				      "SLURM_STEP_NUM_TASKS=2", "SLURM_LOCALID=0",
				      "SLURMD_NODENAME=node7", "SLURM_CLUSTER_NAME=c"),
				  &a),
		1);
	assert_string_equal(a.launcher, "slurm");
	assert_string_equal(a.id, "77.3");
	assert_string_equal(a.host, "node7");
	assert_int_equal(a.size, 2); /* SLURM_NTASKS absent: the step's */
	/* the batch script itself (no step): not a rank */
	assert_int_equal(sonde_job__detect(ENV("SLURM_PROCID=0", "SLURM_JOB_ID=77"), &b), 0);
	/* the next step of the same job is another run */
	assert_int_equal(sonde_job__detect(ENV("SLURM_PROCID=1", "SLURM_STEP_ID=4",
					       "SLURM_JOB_ID=77", "SLURM_CLUSTER_NAME=c"),
					   &b),
			 1);
	assert_string_not_equal(a.run_id, b.run_id);
}

/* MPICH's hydra with PMI_FD alone gives nothing job-wide: a run id of the rank's own. */
static void test_mpich_no_job_key(void **state)
{
	struct sonde_job a, b;

	assert_int_equal(sonde_job__detect(ENV("PMI_RANK=0", "PMI_SIZE=2", "PMI_FD=5"), &a), 1);
	assert_int_equal(sonde_job__detect(ENV("PMI_RANK=1", "PMI_SIZE=2", "PMI_FD=5"), &b), 1);
	assert_string_equal(a.launcher, "mpich");
	assert_false(a.run_id_shared);
	assert_string_not_equal(a.run_id, b.run_id);
	/* SONDE_RUN_ID joins them */
	assert_int_equal(
		sonde_job__detect(ENV("PMI_RANK=0", "PMI_SIZE=2", "SONDE_RUN_ID=sweep-9"), &a), 1);
	assert_int_equal(
		sonde_job__detect(ENV("PMI_RANK=1", "PMI_SIZE=2", "SONDE_RUN_ID=sweep-9"), &b), 1);
	assert_true(a.run_id_shared);
	assert_string_equal(a.run_id, b.run_id);
}

/* SONDE_RUN_ID without a launcher: the id (32 hex digits as they are), no rank. */
static void test_own_run_id(void **state)
{
	struct sonde_job j;

	assert_int_equal(
		sonde_job__detect(ENV("SONDE_RUN_ID=0123456789abcdef0123456789abcdef"), &j), 0);
	assert_string_equal(j.run_id, "0123456789abcdef0123456789abcdef");
	assert_string_equal(j.launcher, "");
	assert_int_equal(sonde_job__detect(ENV("HOME=/root"), &j), 0);
	assert_string_equal(j.run_id, "");
}

/* A launcher's variables that are not numbers: refused, not a rank of -1. */
static void test_malformed(void **state)
{
	struct sonde_job j;

	assert_int_equal(sonde_job__detect(ENV("OMPI_COMM_WORLD_RANK=x"), &j), -EINVAL);
	assert_int_equal(
		sonde_job__detect(ENV("OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=4x"), &j),
		-EINVAL);
	assert_int_equal(sonde_job__detect(ENV("PMI_RANK=-1"), &j), -EINVAL);
}

/* The clock pair: realtime and monotonic read together, the boot named. */
static void test_clock(void **state)
{
	json_t *c = sonde_job__clock();

	assert_non_null(c);
	assert_true(json_integer_value(json_object_get(c, "monotonic_ns")) > 0);
	assert_true(json_integer_value(json_object_get(c, "realtime_ns")) >
		    1600000000LL * 1000000000LL);
	assert_true(json_integer_value(json_object_get(c, "read_ns")) >= 0);
	assert_int_equal(strlen(json_string_value(json_object_get(c, "boot_id"))), 36);
	json_decref(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_openmpi),	   cmocka_unit_test(test_torchrun_in_slurm),
		cmocka_unit_test(test_slurm),	   cmocka_unit_test(test_mpich_no_job_key),
		cmocka_unit_test(test_own_run_id), cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_clock),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
