"""An EC2 client (boto3) of the simulated VPC's loopback endpoint, for the
changes the tests and the chaos harness make behind enid's back: the same
credentials and region the sim gives its nodes, never an address that
could leave the machine."""


def client(ep, max_attempts, connect_timeout=None, read_timeout=None):
    """ep: the sim's endpoints (Sim.endpoints()).  Retries in botocore's
    standard mode, at most max_attempts calls for one request."""
    import boto3
    from botocore.config import Config
    timeouts = {}
    if connect_timeout is not None:
        timeouts["connect_timeout"] = connect_timeout
    if read_timeout is not None:
        timeouts["read_timeout"] = read_timeout
    creds = ep["static_credentials"]
    return boto3.client(
        "ec2", endpoint_url=ep["ec2_loopback"], region_name=ep["region"],
        aws_access_key_id=creds["access_key_id"],
        aws_secret_access_key=creds["secret_access_key"],
        config=Config(retries={"max_attempts": max_attempts,
                               "mode": "standard"}, **timeouts))
