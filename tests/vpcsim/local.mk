# simulated VPC
